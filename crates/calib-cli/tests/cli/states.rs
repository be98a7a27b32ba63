//! `calib eval --save-state` per shard, then `calib merge`: the metrics of all the rows.

use calib_cli::io::Scores;

use crate::common::*;

const STATIC: &str = "ece,mce,sce,toplabel_ece,nll,brier,brier_decomposition,accuracy";

/// The DenseNet-40 test split as three .npy shards (and whole); returns the shard names.
fn shards(dir: &Scratch) -> Vec<(String, String)> {
    let test = split(&densenet(), "test");
    let Scores::F32(z) = test.scores else { panic!("float32 dump") };
    write_shards(dir, &z, test.n_columns, &test.labels, &[0, 3_000, 3_001, test.n_samples])
}

#[test]
fn merged_shard_states_equal_the_whole_file() {
    let dir = Scratch::new("states");
    let names = shards(&dir);
    let whole = metrics_of(&dir.calib(&[
        "eval",
        "z.npy",
        "--labels",
        "y.npy",
        "--metrics",
        STATIC,
        "--format",
        "json",
    ]));
    let mut states = Vec::new();
    for (i, (z, y)) in names.iter().enumerate() {
        // JSON and the binary form, in memory and chunked.
        let state = if i == 1 { format!("s{i}.json") } else { format!("s{i}.state") };
        let mut args = vec!["eval", z, "--labels", y, "--metrics", STATIC, "--save-state", &state];
        if i == 2 {
            args.extend(["--chunk-rows", "999"]);
        }
        dir.calib(&args).ok();
        states.push(state);
    }
    let mut merge = vec!["merge"];
    merge.extend(states.iter().map(String::as_str));
    merge.extend(["--format", "json", "--save-state", "all.json"]);
    let run = dir.calib(&merge);
    let merged = metrics_of(&run);
    assert_same_metrics(&whole, &merged, 1e-12);
    assert_eq!(run.json()["n"], 10_000);
    // The merged state reads back as the same metrics.
    assert_same_metrics(
        &whole,
        &metrics_of(&dir.calib(&["merge", "all.json", "--format", "json"])),
        1e-12,
    );
}

#[test]
fn states_keep_what_streams_and_refuse_to_mix() {
    let dir = Scratch::new("states-err");
    let names = shards(&dir);
    let (z, y) = (&names[0].0, &names[0].1);
    // Metrics on sorted pairs are left out, with a warning naming them.
    let run =
        dir.calib(&["eval", z, "--labels", y, "--metrics", "ece,smece", "--save-state", "w.json"]);
    run.ok();
    assert!(run.stderr.contains("smece") && run.stderr.contains("left out"), "{}", run.stderr);
    // The default set: the adaptive metrics need another pass, which the merge names.
    dir.calib(&["eval", z, "--labels", y, "--save-state", "a.json"]).ok();
    let run = dir.calib(&["merge", "a.json", "--format", "json"]);
    let merged = metrics_of(&run);
    assert!(merged.contains_key("ece") && !merged.contains_key("ace"));
    assert_eq!(run.json()["pending"][1], "ace");
    assert!(run.stderr.contains("pass 2") && run.stderr.contains("--save-state"), "{}", run.stderr);
    dir.calib(&["eval", z, "--labels", y, "--metrics", "ks", "--save-state", "b.json"])
        .fails_with(&["--save-state", "ks"]);
    dir.calib(&["eval", z, "--labels", y, "--bins", "10", "--save-state", "c.json"]).ok();
    dir.calib(&["merge", "a.json", "c.json"]).fails_with(&["c.json", "configurations"]);
    std::fs::write(dir.path("junk.json"), "{\"not\": 1}").unwrap();
    dir.calib(&["merge", "a.json", "junk.json"])
        .fails_with(&["junk.json", "not an evaluation state"]);
    dir.calib(&["merge", "missing.json"]).fails_with(&["missing.json"]);
}

#[test]
fn a_state_changed_after_it_was_written_is_refused() {
    let dir = Scratch::new("states-sum");
    let names = shards(&dir);
    let (z, y) = (&names[0].0, &names[0].1);
    dir.calib(&["eval", z, "--labels", y, "--metrics", "ece", "--save-state", "a.json"]).ok();
    dir.calib(&["eval", z, "--labels", y, "--metrics", "ece", "--save-state", "a.state"]).ok();
    // One count raised in the JSON, one byte flipped in the binary form.
    let json = std::fs::read_to_string(dir.path("a.json")).unwrap();
    let edited = json.replacen("\"n_samples\":3000", "\"n_samples\":3001", 1);
    assert_ne!(edited, json);
    std::fs::write(dir.path("b.json"), edited).unwrap();
    let mut bytes = std::fs::read(dir.path("a.state")).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(dir.path("b.state"), bytes).unwrap();
    for damaged in ["b.json", "b.state"] {
        dir.calib(&["merge", "a.json", damaged]).fails_with(&[damaged, "checksum does not match"]);
    }
    // A state of an older format is refused by name.
    std::fs::write(dir.path("old.json"), json.replacen("{\"format\":6", "{\"format\":5", 1))
        .unwrap();
    dir.calib(&["merge", "old.json"]).fails_with(&["old.json", "format 5"]);
}
