"""The agent: `Agent` (configuration, reusable, and what it learns across runs), one
run's steps (`steps`, private to the package), and the result (`run`)."""
