"""What reads the wire: the canonical stream of a payload, the prefix guard and why a
prefix moved, the provider's own verdict, a request's record, and which earlier
response a request is compared with."""
