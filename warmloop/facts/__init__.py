"""What describes a model's cache: its facts (window, cache rules, prices, each with
its source), the dated tables and their one key rule, usage and pricing."""
