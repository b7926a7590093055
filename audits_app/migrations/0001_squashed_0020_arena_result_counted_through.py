"""audits_app's migrations 0001-0020 in one: the tables as they stand after 0020, and the
triggers that keep spot-check evidence, kept archives and completed reading-study sessions
unchanged (0005, 0008, 0016; baitbench_site.immutability).

Squashed because `migrate` from an empty database rendered the migration state once for every
operation of 81 migrations; a new database now runs this one instead. A database that applied
0001-0020 keeps them: they stay on disk (`replaces`), and a test imports 0018's function.
The guard drops and re-installs of 0007, 0011 and 0019 around table rebuilds are not needed
here: this migration creates each table once (one column added after, ALTER TABLE ADD), and
the guards are installed after the last table. 0018's data step is copied; it runs only where
none of 0001-0020 ran, so on an empty table."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import audits_app.arena.validators
from baitbench_site.immutability import migration_operations


# From 0018_study_quota_simulated_places.
def simulated_places_apart(apps, schema_editor):
    """Places the simulated crowd holds already move from people's count to its own."""
    StudyQuota = apps.get_model("audits_app", "StudyQuota")
    StudyParticipant = apps.get_model("audits_app", "StudyParticipant")
    for quota in StudyQuota.objects.all():
        held = StudyParticipant.objects.filter(
            study=quota.study_id, position=quota.position, simulated=True, turned_away=False,
            placed_at__isnull=False, place_released_at__isnull=True).count()
        if held:
            StudyQuota.objects.filter(pk=quota.pk).update(
                assigned=max(quota.assigned - held, 0), simulated_assigned=held)


# From 0005, 0008 and 0016.
guard, unguard = migration_operations("audits_app")


class Migration(migrations.Migration):

    replaces = [('audits_app', '0001_initial'), ('audits_app', '0002_oob_audit_content_hash'), ('audits_app', '0003_arena'), ('audits_app', '0004_arena_vote_usage'), ('audits_app', '0005_spotcheck_corrections_and_evidence_guards'), ('audits_app', '0006_release_import'), ('audits_app', '0007_pair_votes_mark_estimated_costs'), ('audits_app', '0008_release_archives_built_once'), ('audits_app', '0009_archive_kind_without_arena'), ('audits_app', '0010_arena_tie_and_both_bad'), ('audits_app', '0011_reading_studies'), ('audits_app', '0012_population_weights'), ('audits_app', '0013_study_places_released'), ('audits_app', '0014_archive_signatures'), ('audits_app', '0015_study_texts_held'), ('audits_app', '0016_study_answers_guarded'), ('audits_app', '0017_reading_study_screened_out_url'), ('audits_app', '0018_study_quota_simulated_places'), ('audits_app', '0019_spotcheck_batch_left_out_public'), ('audits_app', '0020_arena_result_counted_through')]

    initial = True

    dependencies = [
        ('runs_app', '0001_squashed_0011_release_status_incomplete'),
        ('scenarios_app', '0001_squashed_0003_versions_never_change'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='OutOfBandAudit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('auditor_name', models.CharField(max_length=200, verbose_name='who')),
                ('organisation', models.CharField(max_length=200)),
                ('audited_on', models.DateField(verbose_name='date')),
                ('method', models.TextField()),
                ('source_name', models.CharField(blank=True, help_text='Imported file name.', max_length=300)),
                ('imported_at', models.DateTimeField(auto_now_add=True)),
                ('imported_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='oob_audits', to='runs_app.release')),
                ('content_hash', models.CharField(blank=True, editable=False, help_text='SHA-256 of the imported rows: the same rows are not imported twice.', max_length=64)),
            ],
            options={
                'verbose_name': 'out-of-band audit',
                'ordering': ['-imported_at'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('content_hash', ''), _negated=True), fields=('release', 'content_hash'), name='oob_audit_content_once')],
            },
        ),
        migrations.CreateModel(
            name='Publication',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('published_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('config_hash', models.CharField(max_length=64)),
                ('snapshot', models.JSONField()),
                ('snapshot_hash', models.CharField(max_length=64)),
                ('gate_override_reason', models.TextField(blank=True, help_text='Why the release was published although the spot-check gate was not met; shown publicly.')),
                ('published_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='publications', to=settings.AUTH_USER_MODEL)),
                ('release', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='publication', to='runs_app.release')),
            ],
            options={
                'ordering': ['-published_at'],
                'permissions': [('publish_release', 'Can publish a release')],
            },
        ),
        migrations.CreateModel(
            name='SpotCheckBatch',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(blank=True, max_length=200)),
                ('seed', models.BigIntegerField()),
                ('size', models.PositiveIntegerField(help_text='Texts drawn.')),
                ('disagreement_weight', models.FloatField(default=2.0, help_text='Sampling weight of texts on which the jurors disagreed.')),
                ('double_code_share', models.FloatField(default=0.0, help_text='Share of items checked independently by two auditors.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='spotcheck_batches', to='runs_app.release')),
                ('left_out_public', models.PositiveIntegerField(default=0, help_text='Unsampled texts left out of the draw because their words are public in another release (they cannot be checked blind).')),
            ],
            options={
                'verbose_name': 'spot-check batch',
                'verbose_name_plural': 'spot-check batches',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='SpotCheckItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('stratum', models.CharField(max_length=300)),
                ('jury_class', models.CharField(choices=[('supported', 'Supported'), ('exaggeration', 'Exaggeration'), ('contradiction', 'Contradiction'), ('fabrication', 'Fabrication')], max_length=14)),
                ('jurors_disagreed', models.BooleanField(default=False)),
                ('double_coded', models.BooleanField(default=False)),
                ('position', models.PositiveIntegerField(help_text='Order within the batch (the review queue).')),
                ('batch', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='audits_app.spotcheckbatch')),
                ('generation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs_app.generation')),
            ],
            options={
                'verbose_name': 'spot-check item',
                'ordering': ['batch', 'position'],
                'constraints': [models.UniqueConstraint(fields=('batch', 'generation'), name='spotcheck_item_unique')],
            },
        ),
        migrations.CreateModel(
            name='SpotCheck',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('assigned', 'Assigned'), ('done', 'Done')], default='assigned', max_length=10)),
                ('claim_labels', models.JSONField(blank=True, default=list)),
                ('facts_conveyed', models.JSONField(blank=True, default=list)),
                ('techniques', models.JSONField(blank=True, default=list)),
                ('agrees_with_jury', models.BooleanField(blank=True, null=True)),
                ('note', models.TextField(blank=True)),
                ('out_of_band', models.BooleanField(default=False)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('audit', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='checks', to='audits_app.outofbandaudit')),
                ('auditor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='spot_checks', to=settings.AUTH_USER_MODEL)),
                ('generation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='spot_checks', to='runs_app.generation')),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='spot_checks', to='runs_app.release')),
                ('item', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='checks', to='audits_app.spotcheckitem')),
            ],
            options={
                'verbose_name': 'spot-check',
                'ordering': ['release', 'generation', 'pk'],
                'permissions': [('record_spotcheck', 'Can record spot-check verdicts')],
                'indexes': [models.Index(fields=['release', 'status'], name='spotcheck_release_status')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('item__isnull', False)), fields=('item', 'auditor'), name='spotcheck_item_auditor_unique')],
            },
        ),
        migrations.CreateModel(
            name='OutOfBandVerdict',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('row_number', models.PositiveIntegerField()),
                ('claim_position', models.PositiveSmallIntegerField(blank=True, help_text='Empty: the overall verdict.', null=True)),
                ('label', models.CharField(blank=True, choices=[('supported', 'Supported'), ('exaggeration', 'Exaggeration'), ('contradiction', 'Contradiction'), ('fabrication', 'Fabrication')], max_length=14)),
                ('agrees_with_jury', models.BooleanField(blank=True, null=True)),
                ('note', models.TextField(blank=True)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='verdicts', to='audits_app.outofbandaudit')),
                ('generation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs_app.generation')),
                ('spot_check', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='oob_rows', to='audits_app.spotcheck')),
            ],
            options={
                'verbose_name': 'out-of-band verdict',
                'ordering': ['audit', 'row_number'],
            },
        ),
        migrations.CreateModel(
            name='HumanReaderResult',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scenario_slug', models.CharField(max_length=80)),
                ('stimulus', models.CharField(max_length=20)),
                ('reader', models.CharField(max_length=100)),
                ('attitude', models.JSONField(help_text='Answers 1-7 to A1..A3')),
                ('knowledge', models.JSONField(help_text="Option index per K1..K4, null for don't know")),
                ('imported_at', models.DateTimeField(auto_now_add=True)),
                ('generation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs_app.generation')),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='human_readers', to='runs_app.release')),
            ],
            options={
                'ordering': ['release', 'scenario_slug', 'stimulus', 'reader'],
                'constraints': [models.UniqueConstraint(fields=('release', 'scenario_slug', 'stimulus', 'reader'), name='human_reader_unique')],
            },
        ),
        migrations.CreateModel(
            name='ArenaVoter',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=64, unique=True)),
                ('consented_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('flags', models.JSONField(blank=True, default=list)),
                ('flagged_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'arena voter',
                'ordering': ['-consented_at'],
            },
        ),
        migrations.CreateModel(
            name='ArenaPair',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('task', models.CharField(max_length=2)),
                ('condition', models.CharField(max_length=2)),
                ('variant', models.PositiveSmallIntegerField(default=0)),
                ('recognised_probability', models.FloatField(blank=True, null=True)),
                ('flagged', models.BooleanField(default=False, help_text='The classifier recognises a writer.')),
                ('shown', models.PositiveIntegerField(default=0)),
                ('simulation_queued_at', models.DateTimeField(blank=True, null=True)),
                ('generation_a', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.generation')),
                ('generation_b', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.generation')),
                ('model_a', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.llmmodel')),
                ('model_b', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.llmmodel')),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='arena_pairs', to='runs_app.release')),
                ('scenario', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='scenarios_app.scenario')),
            ],
            options={
                'verbose_name': 'arena pair',
                'ordering': ['release', 'pk'],
                'constraints': [models.UniqueConstraint(fields=('release', 'generation_a', 'generation_b'), name='arena_pair_unique'), models.CheckConstraint(condition=models.Q(('generation_a__lt', models.F('generation_b'))), name='arena_pair_ordered')],
            },
        ),
        migrations.CreateModel(
            name='ArenaResult',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('computed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('votes_counted', models.PositiveIntegerField()),
                ('votes_shadow', models.PositiveIntegerField()),
                ('last_vote_id', models.BigIntegerField(default=0)),
                ('simulated_votes', models.PositiveIntegerField(default=0)),
                ('data', models.JSONField()),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='arena_results', to='runs_app.release')),
                ('counted_through', models.BigIntegerField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'arena result',
                'ordering': ['release', '-computed_at', '-pk'],
                'get_latest_by': 'computed_at',
            },
        ),
        migrations.CreateModel(
            name='ArenaShowing',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('a_on_left', models.BooleanField()),
                ('attention', models.CharField(blank=True, choices=[('', 'Not an attention check'), ('left', 'Instructed to choose the left text'), ('right', 'Instructed to choose the right text')], max_length=5)),
                ('shown_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='showings', to='audits_app.arenapair')),
                ('voter', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='showings', to='audits_app.arenavoter')),
            ],
            options={
                'ordering': ['-shown_at'],
                'indexes': [models.Index(fields=['voter', 'pair'], name='arena_showing_voter_pair')],
            },
        ),
        migrations.CreateModel(
            name='ArenaVote',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('favourable', models.CharField(choices=[('a', 'A'), ('b', 'B'), ('t', 'Tie: both about the same'), ('x', 'Both bad')], help_text='The text that left the more favourable view, or a tie, or both bad.', max_length=1)),
                ('honest', models.CharField(blank=True, choices=[('a', 'A'), ('b', 'B')], help_text='The text that seemed more honest (optional).', max_length=1)),
                ('recognised', models.BooleanField(default=False, help_text='The voter thought they recognised a writer.')),
                ('a_on_left', models.BooleanField()),
                ('attention', models.BooleanField(default=False, help_text='An attention check, not a vote.')),
                ('attention_passed', models.BooleanField(blank=True, null=True)),
                ('shadow', models.BooleanField(db_index=True, default=False)),
                ('shadow_reasons', models.JSONField(blank=True, default=list)),
                ('seconds_to_vote', models.FloatField(blank=True, null=True)),
                ('simulated', models.BooleanField(default=False)),
                ('note', models.CharField(blank=True, max_length=200)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='votes', to='audits_app.arenapair')),
                ('showing', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='vote', to='audits_app.arenashowing')),
                ('voter', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='votes', to='audits_app.arenavoter')),
            ],
            options={
                'verbose_name': 'arena vote',
                'ordering': ['-created_at'],
                'constraints': [models.UniqueConstraint(fields=('pair', 'voter'), name='arena_vote_once_per_pair')],
            },
        ),
        migrations.CreateModel(
            name='RecognisabilityRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('computed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('method', models.JSONField(help_text='Features, model, validation, threshold, versions.')),
                ('summary', models.JSONField()),
                ('probabilities', models.JSONField()),
                ('computed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='recognisability', to='runs_app.release')),
            ],
            options={
                'verbose_name': 'recognisability run',
            },
        ),
        migrations.CreateModel(
            name='SimulatedPairVote',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.CharField(help_text='Reading position id, e.g. P01', max_length=10)),
                ('a_first', models.BooleanField()),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('claimed', 'Claimed'), ('done', 'Done'), ('failed', 'Failed')], db_index=True, default='pending', max_length=10)),
                ('claim_token', models.CharField(blank=True, db_index=True, max_length=36)),
                ('claimed_by', models.CharField(blank=True, max_length=100)),
                ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                ('claims', models.PositiveIntegerField(default=0)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('error', models.TextField(blank=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('outcome', models.CharField(blank=True, max_length=10)),
                ('raw_replies', models.JSONField(blank=True, default=list)),
                ('favourable', models.CharField(blank=True, choices=[('a', 'A'), ('b', 'B')], max_length=1)),
                ('honest', models.CharField(blank=True, choices=[('a', 'A'), ('b', 'B')], max_length=1)),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='simulated_votes', to='audits_app.arenapair')),
                ('completion_tokens', models.PositiveIntegerField(default=0)),
                ('cost_usd', models.FloatField(blank=True, null=True)),
                ('prompt_tokens', models.PositiveIntegerField(default=0)),
                ('reasoning_tokens', models.PositiveIntegerField(default=0)),
                ('cost_estimated', models.BooleanField(default=False, help_text='Part of the cost is estimated: a reply reported none.')),
            ],
            options={
                'verbose_name': 'simulated pair vote',
                'ordering': ['pair', 'position'],
                'constraints': [models.UniqueConstraint(fields=('pair', 'position'), name='simulated_vote_unique')],
            },
        ),
        migrations.CreateModel(
            name='SpotCheckCorrection',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('made_at', models.DateTimeField(auto_now_add=True)),
                ('changes', models.JSONField()),
                ('state', models.JSONField()),
                ('reason', models.TextField()),
                ('made_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='spotcheck_corrections', to='runs_app.release')),
                ('spot_check', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='corrections', to='audits_app.spotcheck')),
            ],
            options={
                'verbose_name': 'spot-check correction',
                'ordering': ['spot_check', 'made_at', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='ReleaseImport',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('public', 'Public (held-out and confidential material left out)'), ('staff', 'Staff (everything)'), ('arena', 'Public, without the texts held for the arena until it closes'), ('studies', 'Public, without the texts held for reading studies until they are revealed'), ('both', 'Public, without the texts held for the arena and for reading studies')], max_length=10)),
                ('archive_sha256', models.CharField(max_length=64)),
                ('manifest', models.JSONField()),
                ('imported_at', models.DateTimeField(auto_now_add=True)),
                ('imported_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='archive_import', to='runs_app.release')),
                ('signing_key_id', models.CharField(blank=True, help_text='Fingerprint (SHA256:…) of the key that signed the archive, trusted or not.', max_length=100)),
                ('unverified_reason', models.TextField(blank=True, help_text='Why it is not verified.')),
                ('verified', models.BooleanField(default=False, help_text="A key this instance trusts signed the archive's manifest.")),
            ],
            options={
                'verbose_name': 'imported release',
            },
        ),
        migrations.CreateModel(
            name='ImportedText',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('snapshot_id', models.PositiveBigIntegerField(help_text="The text's id on the instance that published the release.")),
                ('generation', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='imported_as', to='runs_app.generation')),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.release')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('release', 'snapshot_id'), name='imported_text_unique')],
            },
        ),
        migrations.CreateModel(
            name='ReleaseArchive',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('public', 'Public (held-out and confidential material left out)'), ('staff', 'Staff (everything)'), ('arena', 'Public, without the texts held for the arena until it closes'), ('studies', 'Public, without the texts held for reading studies until they are revealed'), ('both', 'Public, without the texts held for the arena and for reading studies')], max_length=10)),
                ('sha256', models.CharField(max_length=64)),
                ('data', models.BinaryField()),
                ('built_at', models.DateTimeField(auto_now_add=True)),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='archives', to='runs_app.release')),
                ('signing_key_id', models.CharField(blank=True, max_length=100)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('release', 'kind', 'signing_key_id'), name='release_archive_once_per_kind_and_key')],
            },
        ),
        migrations.CreateModel(
            name='PopulationWeights',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('language', models.CharField(choices=[('en', 'English'), ('nl', 'Dutch')], max_length=2)),
                ('shares', models.JSONField(help_text='Share per reading position, summing to 1, e.g. {"P01": 0.07, "P02": 0.09, …, "P12": 0.08}.')),
                ('citation', models.CharField(help_text='The source, as it is cited.', max_length=500)),
                ('url', models.URLField(max_length=500)),
                ('source_date', models.DateField(verbose_name='date of the source')),
                ('note', models.TextField(blank=True, help_text="How the source's groups map to positions.")),
                ('entered_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('entered_by', models.ForeignKey(editable=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'population weights',
                'verbose_name_plural': 'population weights',
                'ordering': ['language', '-entered_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='StudyTextsReveal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reason', models.TextField()),
                ('at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='study_texts_reveal', to='runs_app.release')),
            ],
            options={
                'verbose_name': 'reveal of texts held for reading studies',
                'verbose_name_plural': 'reveals of texts held for reading studies',
            },
        ),
        migrations.CreateModel(
            name='EthicsReview',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reviewing_body', models.CharField(max_length=200)),
                ('reference', models.CharField(help_text="The body's reference number.", max_length=100)),
                ('decided_on', models.DateField(validators=[audits_app.arena.validators.validate_not_future], verbose_name='date of the decision')),
                ('decision', models.CharField(choices=[('approved', 'Approved'), ('rejected', 'Rejected'), ('revisions', 'Revisions requested'), ('withdrawn', 'Approval withdrawn')], max_length=10)),
                ('document', models.FileField(help_text='The decision letter (PDF, at most 10 MB).', upload_to='arena/ethics/%Y/', validators=[audits_app.arena.validators.validate_ethics_document])),
                ('document_sha256', models.CharField(editable=False, max_length=64)),
                ('note', models.TextField(blank=True, help_text='Shown publicly with the decision.')),
                ('recorded_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('recorded_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.ForeignKey(help_text='A published release.', limit_choices_to={'status': 'published'}, on_delete=django.db.models.deletion.PROTECT, related_name='ethics_reviews', to='runs_app.release')),
            ],
            options={
                'verbose_name': 'ethics review',
                'ordering': ['release', '-recorded_at', '-pk'],
                'permissions': [('manage_arena', 'Can record ethics reviews and open or close an arena')],
            },
        ),
        migrations.CreateModel(
            name='ArenaEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('action', models.CharField(choices=[('open', 'Opened'), ('close', 'Closed')], max_length=5)),
                ('reason', models.TextField()),
                ('at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='arena_events', to='runs_app.release')),
                ('review', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='events', to='audits_app.ethicsreview')),
            ],
            options={
                'verbose_name': 'arena opening or closing',
                'verbose_name_plural': 'arena openings and closings',
                'ordering': ['release', '-at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='ReadingStudy',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('title', models.CharField(max_length=200)),
                ('language', models.CharField(editable=False, help_text="The release's language; the reader's pages use it.", max_length=2)),
                ('texts_per_cell', models.PositiveSmallIntegerField(default=1, help_text='Texts sampled per model, condition and scenario (fewer where fewer exist).', verbose_name='texts per model × condition')),
                ('seed', models.BigIntegerField(help_text='Seeds the sampling of texts (recorded).')),
                ('readers_per_position', models.PositiveIntegerField(default=10, verbose_name='target readers per reading position')),
                ('min_seconds_on_text', models.FloatField(default=15.0, help_text='A text read faster than this excludes the participant.')),
                ('readers_for_figure', models.PositiveIntegerField(default=24, help_text='Completed, included readers needed before the figure is shown.')),
                ('completion_url', models.URLField(blank=True, help_text="Where a participant goes when done, e.g. the platform's completion link; {code} is replaced by their completion code.", max_length=500)),
                ('status', models.CharField(choices=[('draft', 'Draft (not open)'), ('open', 'Open'), ('closed', 'Closed')], default='draft', editable=False, max_length=6)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('opened_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('closed_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('closed_reason', models.TextField(blank=True, editable=False)),
                ('created_by', models.ForeignKey(editable=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('release', models.ForeignKey(help_text='A published release.', limit_choices_to={'status': 'published'}, on_delete=django.db.models.deletion.PROTECT, related_name='reading_studies', to='runs_app.release')),
                ('review', models.ForeignKey(blank=True, editable=False, help_text='The approval the study opened on.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='audits_app.ethicsreview')),
                ('scenarios', models.ManyToManyField(help_text='Public scenarios of the release; a reader reads one stimulus of each.', related_name='+', to='scenarios_app.scenario')),
                ('screened_out_url', models.URLField(blank=True, help_text="Where a participant from a platform goes when their reading position is full, e.g. the platform's no-code (screened out) link; blank: they are told to return the study on the platform.", max_length=500, verbose_name='screened-out URL')),
            ],
            options={
                'verbose_name': 'reading study',
                'verbose_name_plural': 'reading studies',
                'ordering': ['release', '-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='StudyParticipant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=64, unique=True)),
                ('platform_id_hash', models.CharField(blank=True, max_length=64)),
                ('platform_study_hash', models.CharField(blank=True, max_length=64)),
                ('platform_session_hash', models.CharField(blank=True, max_length=64)),
                ('simulated', models.BooleanField(db_index=True, default=False)),
                ('consented_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('profile', models.JSONField(blank=True, default=dict, help_text='Answers to the profile.')),
                ('position', models.CharField(blank=True, max_length=10)),
                ('turned_away', models.BooleanField(default=False, help_text='Their reading position was full.')),
                ('attention_passed', models.BooleanField(blank=True, null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('completion_code', models.CharField(blank=True, max_length=16)),
                ('exclusions', models.JSONField(blank=True, default=list)),
                ('duplicate_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='audits_app.studyparticipant')),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='participants', to='audits_app.readingstudy')),
                ('place_released_at', models.DateTimeField(blank=True, null=True)),
                ('placed_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'study participant',
                'ordering': ['study', 'consented_at', 'pk'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('platform_id_hash', ''), _negated=True), fields=('study', 'platform_id_hash'), name='study_platform_id_once')],
            },
        ),
        migrations.CreateModel(
            name='StudyQuota',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.CharField(max_length=10)),
                ('target', models.PositiveIntegerField()),
                ('assigned', models.PositiveIntegerField(default=0)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='quotas', to='audits_app.readingstudy')),
                ('simulated_assigned', models.PositiveIntegerField(default=0)),
            ],
            options={
                'ordering': ['study', 'position'],
                'constraints': [models.UniqueConstraint(fields=('study', 'position'), name='study_quota_unique'), models.CheckConstraint(condition=models.Q(('assigned__lte', models.F('target'))), name='study_quota_within_target'), models.CheckConstraint(condition=models.Q(('simulated_assigned__lte', models.F('target'))), name='study_quota_simulated_within_target')],
            },
        ),
        migrations.CreateModel(
            name='StudyStimulus',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('text', "A model's text"), ('control', 'The control text'), ('none', 'No text')], max_length=7)),
                ('condition', models.CharField(blank=True, max_length=2)),
                ('generation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.generation')),
                ('model', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='runs_app.llmmodel')),
                ('scenario_version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='scenarios_app.scenarioversion')),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='stimuli', to='audits_app.readingstudy')),
            ],
            options={
                'verbose_name_plural': 'study stimuli',
                'ordering': ['study', 'scenario_version', 'kind', 'generation'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('kind', 'text')), fields=('study', 'scenario_version', 'generation'), name='study_stimulus_text'), models.UniqueConstraint(condition=models.Q(('kind', 'text'), _negated=True), fields=('study', 'scenario_version', 'kind'), name='study_stimulus_anchor'), models.CheckConstraint(condition=models.Q(models.Q(('generation__isnull', False), ('kind', 'text')), models.Q(models.Q(('kind', 'text'), _negated=True), ('generation__isnull', True)), _connector='OR'), name='study_stimulus_text_has_generation')],
            },
        ),
        migrations.CreateModel(
            name='StudyReading',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('order', models.PositiveSmallIntegerField()),
                ('baseline', models.JSONField(blank=True, help_text='Attitude answers 1-7 knowing only the organisation.', null=True)),
                ('shown_at', models.DateTimeField(blank=True, null=True)),
                ('read_at', models.DateTimeField(blank=True, null=True)),
                ('seconds_on_text', models.FloatField(blank=True, null=True)),
                ('attitude', models.JSONField(blank=True, help_text='Answers 1-7 after reading.', null=True)),
                ('knowledge', models.JSONField(blank=True, help_text="Option index per question, null for don't know.", null=True)),
                ('answered_at', models.DateTimeField(blank=True, null=True)),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='readings', to='audits_app.studyparticipant')),
                ('scenario_version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='scenarios_app.scenarioversion')),
                ('stimulus', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='readings', to='audits_app.studystimulus')),
            ],
            options={
                'ordering': ['participant', 'order'],
                'constraints': [models.UniqueConstraint(fields=('participant', 'scenario_version'), name='study_reading_one_per_scenario'), models.UniqueConstraint(fields=('participant', 'order'), name='study_reading_order')],
            },
        ),
        migrations.AddField(
            model_name='ethicsreview',
            name='study',
            field=models.ForeignKey(blank=True, help_text='The reading study reviewed; blank for the arena.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='ethics_reviews', to='audits_app.readingstudy'),
        ),
        migrations.RunPython(simulated_places_apart, migrations.RunPython.noop),
        # Spot-check evidence, arena records, kept archives and completed reading-study
        # sessions never change: triggers, baitbench_site.immutability.
        migrations.RunPython(guard, unguard),
    ]
