"""One command-line convention for every `ingest` command (`ingest.commands.args`): the table's PATH
or the pipeline's FILE positional, `--set SECTION.KEY=VALUE` with Hudi's keys in the `hudi` section;
the spellings documented before (`--path`, `--config`, bare `hoodie.*` keys) still work."""

from __future__ import annotations

import random
import re

import pytest
from service_tables import ModelWriter, random_batch

from ingest.cli import main
from ingest.hudi.timeline.instant import Action

REPO_CONF = __import__("pathlib").Path(__file__).resolve().parent.parent / "conf"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def small_table(path) -> ModelWriter:
    rng = random.Random(5)
    w = ModelWriter(path, buckets=1)
    for n in range(4):
        w.write(random_batch(rng, n, keys=4, size=3))
    return w


def test_table_commands_take_the_path_positionally_or_as_path(tmp_path, capsys):
    """Hudi's service settings in the `hudi` section or bare: `HoodieCleanConfig.CLEANER_COMMITS_RETAINED`
    (`hoodie.cleaner.commits.retained`) and `HoodieArchivalConfig.MAX_COMMITS_TO_KEEP`
    (`hoodie.keep.max.commits`) reach the cleaner and the archiver either way."""
    path = tmp_path / "t"
    w = small_table(path)
    for argv in (["read", str(path)], ["read", "--path", str(path)]):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        assert len(out.splitlines()) == len(w.model.rows())
    for argv in (["inspect", "table", str(path), "--json"], ["inspect", "table", "--path", str(path), "--json"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and '"file_groups"' in out, err
    code, out, err = run(capsys, "compact", str(path), "--schedule-only")
    assert code == 0 and w.table.timeline().pending(Action.COMPACTION), err
    code, out, err = run(capsys, "compact", str(path))
    assert code == 0 and not w.table.timeline().pending(Action.COMPACTION), err
    for n in range(4, 7):
        w.write(random_batch(random.Random(n), n, keys=4, size=3))
    code, out, err = run(capsys, "clean", str(path), "--set", "hudi.hoodie.cleaner.commits.retained=1")
    assert code == 0 and "deleted" in out, err
    before = len(w.table.timeline().completed())
    code, out, err = run(capsys, "archive", str(path), "--set", "hudi.hoodie.keep.min.commits=2",
                         "--set", "hoodie.keep.max.commits=3", "--set", "hudi.hoodie.cleaner.commits.retained=1")
    assert code == 0 and out.startswith("archived"), err
    assert len(w.table.timeline().completed()) < before


def test_a_table_command_refuses_no_path_two_paths_and_other_sections(tmp_path, capsys):
    """Only Hudi's settings (`HoodieCleanConfig` keys such as `hoodie.cleaner.policy`) reach a table service."""
    path = tmp_path / "t"
    small_table(path)
    code, _, err = run(capsys, "clean")
    assert code == 2 and "required: PATH" in err
    code, _, err = run(capsys, "clean", str(path), "--path", str(tmp_path / "other"))
    assert code == 2 and "PATH given twice" in err
    code, _, err = run(capsys, "clean", str(path), "--set", "stream.trigger=soon")
    assert code == 1 and "stream.trigger: this command takes Hudi's settings only" in err
    code, _, err = run(capsys, "clean", str(path), "--set", "hudi.hoodie.cleaner.policy=NONE")
    assert code == 1 and "hoodie.cleaner.policy" in err


def test_pipeline_commands_take_the_file_positionally_or_as_config(capsys):
    """`--set hoodie.x` is `--set hudi.hoodie.x`: the same Hudi key (`HoodieIndexConfig.INDEX_TYPE`,
    `hoodie.index.type`) whichever spelling."""
    conf = str(REPO_CONF / "backfill.yaml")
    outputs = []
    for argv in (
        ["validate-config", conf, "--no-table-check", "--set", "hudi.hoodie.bucket.index.num.buckets=4"],
        ["validate-config", "--config", conf, "--no-table-check", "--set", "hoodie.bucket.index.num.buckets=4"],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        outputs.append(out)
    assert outputs[0] == outputs[1] and "hoodie.bucket.index.num.buckets: 4" in outputs[0]
    code, _, err = run(capsys, "stream", "--set", "stream.trigger=soon")
    assert code == 2 and "required: FILE" in err


@pytest.mark.parametrize(("command", "section"), [("stream", "source.kafka."), ("backfill", "source.files."),
                                                  ("validate-config", "hudi.hoodie."), ("compact", "hudi.hoodie."),
                                                  ("clean", "hudi.hoodie."), ("archive", "hudi.hoodie.")])
def test_each_help_shows_a_set_example_of_its_own(capsys, monkeypatch, command, section):
    """The `--set` example of each command is a key it takes (a backfill reads files, not Kafka). No Hudi
    rule: the table services' examples are Hudi keys (`HoodieCleanConfig`, `HoodieArchivalConfig`,
    `HoodieCompactionConfig`), the pipelines' are ingest's own sections."""
    monkeypatch.setenv("COLUMNS", "400")  # no line breaks inside the example
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    (example,) = re.findall(r"e\.g\. --set (\S+)=", text)
    assert example.startswith(section), example
