from attnphase.cli import main

raise SystemExit(main())
