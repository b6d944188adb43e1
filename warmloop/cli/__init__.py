"""The command line: `warmloop run | resume | sessions | show | export | record | audit`
(`main` assembles the verbs; `options` holds what they share)."""
