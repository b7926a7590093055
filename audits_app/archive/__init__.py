"""A whole published release as one archive, to take away and to load into another instance.

Format `baitbench.release-archive`, version 1: a ZIP whose `manifest.json` names every other
file with its SHA-256, its size and its row count. Data files are open formats that any tool
reads: JSON, JSON Lines (one object per line), CSV, and scenario files in their own YAML
format (`baitbench.scenario/1`).

| file | what |
|---|---|
| `manifest.json` | format, kind, the release and its hashes, every file's hash and rows |
| `manifest.sig` | the exporting instance's Ed25519 signature of `manifest.json` and its key |
| `README.txt` | this table, for whoever opens the archive by hand |
| `snapshot.json` | the frozen snapshot the pages and the API read |
| `config.json` | the release's configuration |
| `scoring_version.json` | the pinned scoring texts (prompts, weights, techniques) |
| `scenarios/SLUG.yaml` | the pinned version of each scenario |
| `texts.jsonl` | every generation: text, status, provider log, usage |
| `refusals.jsonl` | the refusal judge's verdict on each text |
| `verdicts.jsonl` | every juror verdict (claims in `claims.csv`) |
| `claims.csv` | every claim a juror found: quote, label, what it rests on |
| `reader_responses.jsonl` | every reading position's answers, per stimulus |
| `transcripts.jsonl` | the agent runs: uptake, reveal |
| `crossexam.jsonl` | T4 interviews: questions, answers, the judge's labels (newer archives) |
| `scores.csv` | every per-text score |
| `spotcheck_batches.jsonl` | staff: spot-check batches: seed, size, weights, who drew them |
| `spotcheck_items.jsonl` | staff: the texts each batch drew, with their strata |
| `oob_audits.jsonl` | staff: out-of-band audits: who, organisation, date, method |
| `spotchecks.jsonl` | staff: every spot-check: its auditor, claim labels, verdict, note |
| `spotcheck_corrections.jsonl` | staff: corrections after the reveal: who, when, what, why |
| `oob_verdicts.jsonl` | staff: each out-of-band audit's rows as entered |
| `human_readers.jsonl` | staff: human reader results: reader, stimulus, answers |

Two kinds. The *staff* archive holds all of the release's run, and every hash can be checked
against the content: the snapshot's and configuration's hashes too. Only it holds the audit
records (the `staff:` files above; archives written before they were carried lack them),
naming texts by their id in `texts.jsonl` and people by user name alone, never by e-mail
address or password. The *public* archive holds what the public pages show and nothing else:
no audit record (they name their auditors and hold their notes in their own words; its
snapshot holds the figures drawn from them: `audits_app.archive.audit_records` says why); no
held-out scenario, text or answer; no confidential fact
(each is replaced by a note in the scenario files, whose content hash is then their own);
no prompt (a prompt shows the writer the confidential facts) and no raw model reply. Its
snapshot and configuration are the public view of the original, while the manifest keeps the
original's hashes, under which the release was published.

`audits_app.archive.export` writes an archive; `audits_app.archive.load` checks and loads one.
"""

FORMAT = "baitbench.release-archive"
FORMAT_VERSION = 1
