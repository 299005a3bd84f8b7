"""Pipeline configuration: YAML files, typed keys, validation before Spark starts."""
