"""A completed reading-study session's answers, and every participant's platform hashes, are
refused changes by the database itself (triggers on SQLite and PostgreSQL,
baitbench_site.immutability); so is the reveal of a release's study texts."""

from django.db import migrations

from baitbench_site.immutability import migration_operations

guard, unguard = migration_operations("audits_app")


class Migration(migrations.Migration):

    dependencies = [
        ('audits_app', '0015_study_texts_held'),
    ]

    operations = [
        migrations.RunPython(guard, unguard),
    ]
