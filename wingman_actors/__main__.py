"""``python -m wingman_actors`` runs the launcher."""

from .cli import main

raise SystemExit(main())
