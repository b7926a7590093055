"""Print what an instance answers at some addresses, for comparing two instances byte for byte.

`python -m audits_app.tests.answers_dump URL... [--staff URL...]` with DATABASE_URL naming
the instance's database; prints {"anonymous": {url: [status, base64 body]}, "staff": {...}}
as JSON. The URLs after `--staff` are asked, after the others, as a superuser named "admin"
(created if missing), as pytest-django's `admin_client` does: one process for both, as the
test asks both of its own instance in one.
"""

from __future__ import annotations

import base64
import json
import os
import sys


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    split = argv.index("--staff") if "--staff" in argv else len(argv)
    answers: dict[str, dict] = {"anonymous": {}, "staff": {}}
    for kind, urls in (("anonymous", argv[:split]), ("staff", argv[split + 1:])):
        if not urls:
            continue
        client = Client()
        if kind == "staff":
            user = User.objects.filter(username="admin").first() or User.objects.create_superuser(
                "admin", "admin@example.com", "password")
            client.force_login(user)
        for url in urls:
            response = client.get(url)
            answers[kind][url] = [response.status_code, base64.b64encode(response.content).decode()]
    sys.stdout.write(json.dumps(answers))


if __name__ == "__main__":
    main(sys.argv[1:])
