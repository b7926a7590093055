"""Print what an instance answers at some addresses, for comparing two instances byte for byte.

`python -m audits_app.tests.answers_dump [--staff] URL...` with DATABASE_URL naming the
instance's database; prints {url: [status, base64 body]} as JSON. `--staff` asks as a
superuser named "admin" (created if missing), as pytest-django's `admin_client` does.
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

    staff = "--staff" in argv
    client = Client()
    if staff:
        user = User.objects.filter(username="admin").first() or User.objects.create_superuser(
            "admin", "admin@example.com", "password")
        client.force_login(user)
    answers = {}
    for url in [arg for arg in argv if arg != "--staff"]:
        response = client.get(url)
        answers[url] = [response.status_code, base64.b64encode(response.content).decode()]
    sys.stdout.write(json.dumps(answers))


if __name__ == "__main__":
    main(sys.argv[1:])
