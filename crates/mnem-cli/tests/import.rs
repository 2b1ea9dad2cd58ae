//! `mnem import` of transcripts, notes and benchmark files, on the committed fixtures in
//! `tests/fixtures/import`: what lands, where it came from, and that importing again
//! changes nothing.

mod common;

use std::path::PathBuf;

use common::Store;
use serde_json::Value;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `mnem import --format FORMAT PATH …` without an embedder, as JSON.
fn import(store: &Store, format: &str, path: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--embedder", "none", "import", "--format", format, path];
    args.extend_from_slice(extra);
    store.json(&args)["report"].clone()
}

/// The current items, in the listing's order, without windows.
fn listed(store: &Store) -> Vec<Value> {
    let listing = store.json(&[
        "--embedder",
        "none",
        "recall",
        "",
        "--limit",
        "50",
        "--window",
        "0",
    ]);
    listing["results"].as_array().expect("results").clone()
}

fn contents(items: &[Value]) -> Vec<String> {
    let mut texts: Vec<String> = items
        .iter()
        .map(|i| i["context"].as_str().expect("context").to_string())
        .collect();
    texts.sort();
    texts
}

#[test]
fn a_chat_transcript_lands_one_turn_per_item_and_a_bad_line_is_reported_by_number() {
    let store = Store::new();
    let report = import(
        &store,
        "chat",
        &fixture("chat.jsonl"),
        &["--label", "standup"],
    );
    assert_eq!(report["items"], 3);
    assert_eq!(report["stored"], 3);
    assert_eq!(report["failed"][0]["at"]["line"], 3);
    assert!(report["failed"][0]["reason"]
        .as_str()
        .expect("reason")
        .starts_with("not JSON"));
    let items = listed(&store);
    assert_eq!(
        contents(&items),
        [
            "Lena: Atlas moves its cache from Redis to Valkey next sprint.",
            "Mark: Then I will update the restore runbook.",
            "user: Who owns the Atlas restore runbook?",
        ]
    );
    let mark = items
        .iter()
        .find(|i| i["context"].as_str().is_some_and(|c| c.starts_with("Mark")))
        .expect("Mark's turn");
    let id = mark["evidence_id"].as_str().expect("id");
    let shown = store.json(&["show", id]);
    assert_eq!(shown["evidence"]["source_key"], "standup-0301");
    assert_eq!(shown["evidence"]["kind"], "turn");
    assert_eq!(shown["evidence"]["labels"], serde_json::json!(["standup"]));
    assert_eq!(
        mark["observed_at"], "2024-03-01T09:00:01.000000Z",
        "one second after the session's timed turn"
    );

    let again = import(
        &store,
        "chat",
        &fixture("chat.jsonl"),
        &["--label", "standup"],
    );
    assert_eq!(again["stored"], 0);
    assert_eq!(again["already_stored"], 3, "a re-run writes nothing twice");
    assert_eq!(listed(&store).len(), 3);
}

#[test]
fn strict_refuses_a_transcript_with_a_bad_line_and_writes_nothing() {
    let store = Store::new();
    let out = store.run(&[
        "--embedder",
        "none",
        "import",
        "--format",
        "chat",
        &fixture("chat.jsonl"),
        "--strict",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 3"), "{stderr}");
    assert!(listed(&store).is_empty());
}

#[test]
fn openai_messages_keep_their_roles_and_the_conversation_time() {
    let store = Store::new();
    let report = import(&store, "chat", &fixture("openai.json"), &[]);
    assert_eq!(report["stored"], 3);
    let items = listed(&store);
    let invoice = items
        .iter()
        .find(|i| {
            i["context"]
                .as_str()
                .is_some_and(|c| c.starts_with("user:"))
        })
        .expect("the user's turn");
    assert_eq!(
        invoice["context"],
        "user: My invoice shows the wrong VAT number."
    );
    assert_eq!(invoice["observed_at"], "2024-04-02T15:00:01.000000Z");
}

#[test]
fn a_notes_folder_lands_in_fragments_and_a_changed_file_supersedes_its_old_ones() {
    let store = Store::new();
    let dir = tempfile::tempdir().expect("dir");
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(notes.join("ops")).expect("mkdir");
    std::fs::create_dir_all(notes.join(".git")).expect("mkdir");
    for name in ["ops/runbook.md", "coffee.txt"] {
        std::fs::copy(fixture(&format!("notes/{name}")), notes.join(name)).expect("copy");
    }
    std::fs::write(notes.join(".git/HEAD.md"), "hidden").expect("write");
    let folder = notes.to_string_lossy().into_owned();

    let first = import(&store, "markdown", &folder, &[]);
    assert_eq!(
        first["stored"], 3,
        "two runbook sections and the coffee note"
    );
    let items = listed(&store);
    assert_eq!(
        contents(&items),
        [
            "# Atlas runbook\n## Escalation\n\nPage the on-call engineer if the restore takes longer than thirty minutes.",
            "# Atlas runbook\n## Restore\n\nStop the queue workers, then restore the newest snapshot from the backup bucket.",
            "The coffee machine on floor 3 is descaled every Friday.",
        ]
    );
    let restore = items
        .iter()
        .find(|i| {
            i["context"]
                .as_str()
                .is_some_and(|c| c.contains("## Restore"))
        })
        .expect("restore");
    let old_id = restore["evidence_id"].as_str().expect("id").to_string();
    let shown = store.json(&["show", &old_id]);
    assert_eq!(shown["evidence"]["source_key"], "ops/runbook.md");
    assert_eq!(
        shown["evidence"]["labels"],
        serde_json::json!(["atlas", "ops"])
    );

    let unchanged = import(&store, "markdown", &folder, &[]);
    assert_eq!(unchanged["unchanged_documents"], 2);
    assert_eq!(unchanged["items"], 0);

    let runbook = notes.join("ops/runbook.md");
    let text = std::fs::read_to_string(&runbook).expect("read");
    std::fs::write(&runbook, text.replace("thirty minutes", "twenty minutes")).expect("edit");
    let changed = import(&store, "markdown", &folder, &[]);
    assert_eq!(changed["unchanged_documents"], 1, "the coffee note");
    assert_eq!(changed["stored"], 2);
    let now = contents(&listed(&store));
    assert_eq!(now.len(), 3, "the old fragments no longer count: {now:?}");
    assert!(now.iter().any(|c| c.contains("twenty minutes")));
    assert!(!now.iter().any(|c| c.contains("thirty minutes")));
    let old = store.json(&["show", &old_id]);
    assert_eq!(old["evidence"]["state"], "superseded");
}

#[test]
fn a_folder_imported_again_into_another_scope_moves_there() {
    let store = Store::new();
    let dir = tempfile::tempdir().expect("dir");
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(&notes).expect("mkdir");
    std::fs::copy(fixture("notes/coffee.txt"), notes.join("coffee.txt")).expect("copy");
    let folder = notes.to_string_lossy().into_owned();
    let in_scope = |scope: &str| {
        let listing = store.json(&[
            "--embedder",
            "none",
            "recall",
            "",
            "--scope",
            scope,
            "--window",
            "0",
        ]);
        contents(listing["results"].as_array().expect("results"))
    };

    import(&store, "markdown", &folder, &[]);
    let moved = import(&store, "markdown", &folder, &["--scope", "kb"]);
    assert_eq!(
        moved["unchanged_documents"], 0,
        "held elsewhere is not held in kb"
    );
    assert_eq!(moved["stored"], 1);
    let coffee = ["The coffee machine on floor 3 is descaled every Friday."];
    assert_eq!(in_scope("kb"), coffee);
    assert_eq!(
        contents(&listed(&store)),
        coffee,
        "one current copy: it moved"
    );

    let again = import(&store, "markdown", &folder, &["--scope", "kb"]);
    assert_eq!(again["unchanged_documents"], 1);
    assert_eq!(again["items"], 0);
}

#[test]
fn benchmark_files_land_their_conversations() {
    let store = Store::new();
    let lme = import(&store, "longmemeval", &fixture("longmemeval.json"), &[]);
    assert_eq!(lme["stored"], 3);
    let locomo = import(&store, "locomo", &fixture("locomo.json"), &[]);
    assert_eq!(locomo["stored"], 2);
    let found = store.json(&["--embedder", "none", "recall", "border collie"]);
    assert_eq!(
        found["results"][0]["context"],
        "Ann: I adopted a border collie called Rex."
    );
    assert_eq!(
        import(&store, "locomo", &fixture("locomo.json"), &[])["already_stored"],
        2
    );
}

#[test]
fn a_pack_import_refuses_scope_and_labels() {
    let store = Store::new();
    let out = store.run(&["import", &fixture("chat.jsonl"), "--label", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--label"));
}

/// Every exported evidence item's state, from `mnem export` on stdout.
fn exported_states(store: &Store) -> Vec<String> {
    store
        .ok(&["export"])
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["record"] == "evidence")
        .map(|record| record["state"].as_str().expect("state").to_string())
        .collect()
}

#[test]
fn imports_of_one_folder_at_once_write_each_file_once() {
    let store = Store::new();
    let dir = tempfile::tempdir().expect("dir");
    for n in 0..30 {
        let text = format!("# Service {n}\n\nThe deploy for service {n} happens on Tuesday.\n");
        std::fs::write(dir.path().join(format!("n{n}.md")), text).expect("write");
    }
    let folder = dir.path().to_string_lossy().into_owned();
    store.ok(&["--embedder", "none", "status"]);
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let (db, folder) = (store.path.clone(), folder.clone());
            std::thread::spawn(move || {
                let args = [
                    "--embedder",
                    "none",
                    "import",
                    "--format",
                    "markdown",
                    &folder,
                ];
                common::mnem(Some(&db), &args)
            })
        })
        .collect();
    for run in runs {
        let out = run.join().expect("thread");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let states = exported_states(&store);
    assert_eq!(states.len(), 30, "one item per file: {states:?}");
    assert!(states.iter().all(|s| s == "current"), "{states:?}");
}

#[test]
fn a_file_restored_with_an_old_time_still_replaces_its_stored_text() {
    let store = Store::new();
    let dir = tempfile::tempdir().expect("dir");
    let note = dir.path().join("note.md");
    std::fs::write(&note, "The standup is at nine.").expect("write");
    let folder = dir.path().to_string_lossy().into_owned();
    import(&store, "markdown", &folder, &[]);
    std::fs::write(&note, "The standup is at ten.").expect("write");
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(&note)
        .and_then(|file| file.set_modified(long_ago))
        .expect("set the file's time");
    let report = import(&store, "markdown", &folder, &[]);
    assert_eq!(report["stored"], 1, "{report}");
    assert_eq!(contents(&listed(&store)), ["The standup is at ten."]);
    let mut states = exported_states(&store);
    states.sort();
    assert_eq!(states, ["current", "superseded"]);
}
