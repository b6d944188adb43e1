"""`python -m warmloop`: the `warmloop` command, under that name in its usage text."""

from warmloop.cli.main import main

if __name__ == "__main__":
    main(prog_name="warmloop")
