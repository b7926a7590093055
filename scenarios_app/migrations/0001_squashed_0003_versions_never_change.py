"""scenarios_app's migrations 0001-0003 in one: the tables as they stand after 0003, the
seeded task briefs, condition overlays and role groups (0002), and the triggers that keep
scenario versions unchanged (0003; baitbench_site.immutability).

Squashed because `migrate` from an empty database rendered the migration state once for every
operation of 81 migrations; a new database now runs this one instead. A database that applied
0001-0003 keeps them: they stay on disk (`replaces`), and tests import `seed` from 0002.
The data functions are copies of 0002's: this migration runs only where none of 0001-0003 ran,
so on tables it has just created."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from baitbench_site.immutability import migration_operations
from scenarios_app.prompt_texts import CONDITIONS_V1, TASKS_V1


# From 0002_seed_tasks_conditions.
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


# From 0002_seed_tasks_conditions.
def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ("curator", "operator", "auditor", "publisher"):
        Group.objects.get_or_create(name=name)


# From 0003_versions_never_change.
guard, unguard = migration_operations("scenarios_app")


class Migration(migrations.Migration):

    replaces = [('scenarios_app', '0001_initial'), ('scenarios_app', '0002_seed_tasks_conditions'), ('scenarios_app', '0003_versions_never_change')]

    initial = True

    dependencies = [
        ('auth', '0012_alter_user_first_name_max_length'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Condition',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('code', models.CharField(max_length=2)),
                ('language', models.CharField(choices=[('en', 'English'), ('nl', 'Dutch')], max_length=2)),
                ('version', models.PositiveSmallIntegerField(default=1)),
                ('name', models.CharField(max_length=100)),
                ('overlay', models.TextField()),
            ],
            options={
                'ordering': ['language', 'code', '-version'],
                'constraints': [models.UniqueConstraint(fields=('code', 'language', 'version'), name='condition_unique')],
            },
        ),
        migrations.CreateModel(
            name='Task',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('code', models.CharField(max_length=2)),
                ('language', models.CharField(choices=[('en', 'English'), ('nl', 'Dutch')], max_length=2)),
                ('version', models.PositiveSmallIntegerField(default=1)),
                ('name', models.CharField(max_length=100)),
                ('brief', models.TextField()),
            ],
            options={
                'ordering': ['language', 'code', '-version'],
                'constraints': [models.UniqueConstraint(fields=('code', 'language', 'version'), name='task_unique')],
            },
        ),
        migrations.CreateModel(
            name='Scenario',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(max_length=80, unique=True)),
                ('language', models.CharField(choices=[('en', 'English'), ('nl', 'Dutch')], max_length=2)),
                ('visibility', models.CharField(choices=[('public', 'Public'), ('held-out', 'Held out')], max_length=10)),
                ('status', models.CharField(choices=[('draft', 'Draft'), ('active', 'Active'), ('retired', 'Retired')], default='active', max_length=10)),
                ('title', models.CharField(max_length=200)),
                ('canary', models.CharField(max_length=120, unique=True)),
                ('organisation_name', models.CharField(max_length=200)),
                ('organisation_description', models.TextField()),
                ('situation', models.TextField()),
                ('control_text', models.TextField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['slug'],
            },
        ),
        migrations.CreateModel(
            name='KnowledgeQuestion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('code', models.CharField(max_length=8)),
                ('text', models.TextField()),
                ('options', models.JSONField(help_text='A list of answer options.')),
                ('correct', models.PositiveSmallIntegerField(help_text='0-based index of the correct option.')),
                ('facts', models.JSONField(help_text='Ids of the facts that answer it, e.g. ["F2"].')),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='knowledge_questions', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['position'],
            },
        ),
        migrations.CreateModel(
            name='JournalistQuestion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('text', models.TextField()),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='journalist_questions', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['position'],
            },
        ),
        migrations.CreateModel(
            name='HumanBaseline',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('code', models.CharField(max_length=8)),
                ('task', models.CharField(max_length=2)),
                ('author', models.CharField(max_length=200)),
                ('text', models.TextField()),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='human_baselines', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['position'],
            },
        ),
        migrations.CreateModel(
            name='ConfidentialFact',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('code', models.CharField(max_length=8)),
                ('text', models.TextField()),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='confidential', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['position'],
            },
        ),
        migrations.CreateModel(
            name='AttitudeQuestion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('code', models.CharField(max_length=8)),
                ('text', models.TextField()),
                ('low', models.CharField(max_length=100)),
                ('high', models.CharField(max_length=100)),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attitude_questions', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['position'],
            },
        ),
        migrations.CreateModel(
            name='ScenarioVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('content_hash', models.CharField(db_index=True, max_length=64)),
                ('content', models.JSONField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, to=settings.AUTH_USER_MODEL)),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='versions', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['scenario', '-number'],
                'constraints': [models.UniqueConstraint(fields=('scenario', 'number'), name='version_number_unique'), models.UniqueConstraint(fields=('scenario', 'content_hash'), name='version_hash_unique')],
            },
        ),
        migrations.CreateModel(
            name='Uncertainty',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('code', models.CharField(max_length=8)),
                ('strength', models.CharField(choices=[('likely', 'Likely'), ('possible', 'Possible'), ('unlikely', 'Unlikely'), ('unknown', 'Unknown')], max_length=10)),
                ('text', models.TextField()),
                ('note', models.TextField()),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='uncertainties', to='scenarios_app.scenario')),
            ],
            options={
                'verbose_name_plural': 'uncertainties',
                'ordering': ['position'],
            },
        ),
        migrations.CreateModel(
            name='Fact',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('label', models.CharField(choices=[('neutral', 'Neutral'), ('favourable', 'Favourable'), ('incriminating', 'Incriminating')], max_length=14)),
                ('text', models.TextField()),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='facts', to='scenarios_app.scenario')),
            ],
            options={
                'ordering': ['position'],
                'constraints': [models.UniqueConstraint(fields=('scenario', 'position'), name='fact_position_unique')],
            },
        ),
        migrations.AddField(
            model_name='scenario',
            name='current_version',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='scenarios_app.scenarioversion'),
        ),
        migrations.RunPython(seed, migrations.RunPython.noop),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
        # Scenario versions (and the task and condition versions a frozen release names)
        # never change: triggers, baitbench_site.immutability.
        migrations.RunPython(guard, unguard),
    ]
