"""runs_app's tables: what models did and how it was scored (`pipeline`: the model registry,
releases, their work rows and per-text scores) and the method's own trials (`trials`: the
reader trial and the contamination check). Everything is importable from here."""

from runs_app.models.pipeline import *  # noqa: F403
from runs_app.models.trials import *  # noqa: F403
