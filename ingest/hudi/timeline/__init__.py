"""The timeline (`HoodieActiveTimeline`): instants, their file names per layout version, commit
metadata, and writer heartbeats.
"""
