"""The zone instant times are written and read in: Hudi's `HoodieTimelineTimeZone`.

`hoodie.table.timeline.timezone` holds one of these; an absent value means LOCAL, the writer's own
zone (`HoodieTableConfig.getTimelineTimezone`). A table property, so it lives with the table's
configuration; the timeline's instant arithmetic reads it from here.
"""

UTC, LOCAL = "UTC", "LOCAL"
TIMELINE_ZONES = (LOCAL, UTC)
