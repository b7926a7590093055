from django.db import migrations

from scenarios_app.prompt_texts import CONDITIONS_V1, TASKS_V1


def seed(apps, schema_editor):
    Task = apps.get_model("scenarios_app", "Task")
    Condition = apps.get_model("scenarios_app", "Condition")
    for language, tasks in TASKS_V1.items():
        for code, (name, brief) in tasks.items():
            Task.objects.get_or_create(
                code=code, language=language, version=1, defaults={"name": name, "brief": brief}
            )
    for language, conditions in CONDITIONS_V1.items():
        for code, (name, overlay) in conditions.items():
            Condition.objects.get_or_create(
                code=code, language=language, version=1,
                defaults={"name": name, "overlay": overlay},
            )


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ("curator", "operator", "auditor", "publisher"):
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("scenarios_app", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.RunPython(seed, migrations.RunPython.noop),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
