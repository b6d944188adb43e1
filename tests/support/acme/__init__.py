"""A provider family warmloop does not ship, written outside the package as a folder: the
worked example of docs/adding-a-provider.md. `record` is its one registration (importing
it registers Acme's wire format and provider); `model`, `readers` and `tables` are the rest
of the folder."""
