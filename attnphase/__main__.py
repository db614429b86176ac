"""``python -m attnphase`` runs the console command."""

from attnphase.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
