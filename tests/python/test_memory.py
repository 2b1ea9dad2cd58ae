"""The Python bindings as a user runs them: the installed `mnem` package, in-process on a
real embedded store (scripts/wheel.sh --check runs this against the installed wheel)."""

import threading

import pytest

import mnem
from mnem import Memory


@pytest.fixture
def memory(tmp_path):
    return Memory(tmp_path / "agent.db", team="t", profile="p", embedder="none")


def test_a_remembered_note_is_recalled_by_meaning_with_the_built_in_model(tmp_path):
    m = Memory(tmp_path / "agent.db", team="t", profile="p")
    written = m.remember("Ann relocated to Lisbon in May for a design job")
    m.remember("The quarterly budget review is on Friday")
    recalled = m.recall("which city does Ann live in now?", limit=1)
    assert isinstance(recalled, mnem.Recalled)
    assert [r.evidence_id for r in recalled.results] == [written.evidence_id]
    assert recalled.results[0].context == "Ann relocated to Lisbon in May for a design job"


CHAT = [
    {"role": "user", "content": "Where should I move?"},
    {"role": "assistant", "content": "Lisbon has good light for painters."},
    {"role": "system", "content": ""},
    {"role": "user", "content": "Then I will book a flat there."},
]


def test_a_chat_is_stored_as_turns_and_a_match_comes_with_its_neighbours(memory):
    report = memory.import_chat(CHAT, session="chat-1")
    assert report["stored"] == 3
    assert [p["reason"] for p in report["failed"]] == ["message 3: empty `content`"]
    result = memory.recall("painters light", window=1).results[0]
    assert result.context == "assistant: Lisbon has good light for painters."
    assert [i.context for i in result.before] == ["user: Where should I move?"]
    assert [i.context for i in result.after] == ["user: Then I will book a flat there."]


def test_the_same_chat_imported_again_from_the_same_start_writes_nothing(memory):
    start = "2026-03-01T10:00:00Z"
    assert memory.import_chat(CHAT, session="chat-1", start=start)["stored"] == 3
    again = memory.import_chat(CHAT, session="chat-1", start=start)
    assert (again["stored"], again["already_stored"]) == (0, 3)


def test_show_returns_the_whole_text_and_retract_takes_it_out_of_recall(memory):
    written = memory.remember("The deploy key rotates every 90 days")
    shown = memory.show(written.evidence_id)["evidence"]
    assert shown["content"] == "The deploy key rotates every 90 days"
    memory.retract([written.evidence_id], reason="superseded")
    assert memory.recall("deploy key rotation").results == []


def test_a_bad_field_raises_invalid_request_naming_it(memory):
    with pytest.raises(mnem.InvalidRequest) as caught:
        memory.recall("anything", limt=3)
    assert caught.value.field == "limt"
    with pytest.raises(ValueError):
        memory.recall("anything", since="last blue moon")


def test_an_unknown_id_raises_not_found(memory):
    with pytest.raises(mnem.NotFound):
        memory.show("01a24800-0000-7000-8000-000000000000")


def test_teams_sharing_a_file_never_see_each_other(tmp_path):
    path = tmp_path / "shared.db"
    ours = Memory(path, team="ours", embedder="none")
    theirs = Memory(path, team="theirs", embedder="none")
    ours.remember("Our launch code name is Heron")
    assert theirs.recall("launch code name").results == []
    assert len(ours.recall("launch code name").results) == 1


def test_threads_may_share_one_memory(memory):
    for n in range(20):
        memory.remember(f"ticket {n} concerns the billing page")
    answers, failures = [], []

    def ask():
        try:
            answers.append(len(memory.recall("billing page", limit=5).results))
        except Exception as err:  # noqa: BLE001 - any failure fails the test below
            failures.append(err)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert answers == [5] * 8


def test_an_unknown_embedder_is_refused_before_anything_is_opened(tmp_path):
    with pytest.raises(mnem.InvalidRequest) as caught:
        Memory(tmp_path / "x.db", embedder="gpt")
    assert caught.value.field == "embedder"
    assert not (tmp_path / "x.db").exists()


def test_a_pack_exported_by_one_team_is_imported_by_another_and_recalled(tmp_path):
    path = tmp_path / "packs.db"
    source = Memory(path, team="source", embedder="none")
    source.remember("The on-call rotation changes every Monday", source_key="ops")
    exported = source.export()
    assert exported["counts"]["evidence"] == 1
    target = Memory(path, team="target", embedder="none")
    assert target.recall("on-call rotation").results == []
    report = target.import_pack(exported["pack"])
    assert report["evidence_added"] == 1
    recalled = target.recall("on-call rotation").results
    assert [r.context for r in recalled] == ["The on-call rotation changes every Monday"]
    assert target.import_pack(exported["pack"])["evidence_present"] == 1, "a second import adds nothing"


def test_a_damaged_pack_is_refused_and_nothing_is_written(memory):
    memory.remember("The only item before the import")
    with pytest.raises(mnem.InvalidRequest):
        memory.import_pack('{"not": "a pack"}')
    assert memory.export()["counts"]["evidence"] == 1


def test_the_async_memory_answers_concurrent_coroutines(tmp_path):
    import asyncio

    async def scenario():
        m = mnem.AsyncMemory(tmp_path / "async.db", team="t", embedder="none")
        written = await m.remember("The incident review is on Thursday")
        answers = await asyncio.gather(*(m.recall("incident review") for _ in range(6)))
        assert all([r.evidence_id for r in a.results] == [written.evidence_id] for a in answers)
        with pytest.raises(mnem.InvalidRequest):
            await m.recall("x", limt=1)

    asyncio.run(scenario())


def test_a_store_in_a_folder_that_does_not_exist_yet_is_made_with_its_folder(tmp_path):
    path = tmp_path / "new" / "folder" / "agent.db"
    Memory(path, embedder="none").remember("A note in a new folder")
    assert path.exists()
