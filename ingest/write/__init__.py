"""The write path of a commit, free of Spark: planning, executor-side file group writes, completion."""
