"""Base files (`HoodieParquetWriter`/`HoodieAvroParquetReader`) and the bloom filter in their
footers (`BloomFilterFactory`).
"""
