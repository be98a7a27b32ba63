//! Adaptive ranges over shards: `calib eval --save-state` per shard, `calib merge
//! --save-state`, then `calib eval --resume --shard` per shard and `calib merge` again, pass
//! after pass, equal to `calib eval` of the whole file.

use calib_cli::io::Scores;

use crate::common::*;

const METRICS: &str = "ece,nll,accuracy,rmsce,ace,tace,toplabel_ece,debiased_l2,plugin_l2";

/// DenseNet-40's test logits rounded to steps of 0.5 (so that many rows tie, within and
/// across shards) as one .npy and three shards; returns the shards' (scores, labels) names.
fn tied_shards(dir: &Scratch) -> Vec<(String, String)> {
    let test = split(&densenet(), "test");
    let Scores::F32(z) = test.scores else { panic!("float32 dump") };
    let z: Vec<f32> = z.iter().map(|v| (v * 2.0).round() / 2.0).collect();
    write_shards(dir, &z, test.n_columns, &test.labels, &[0, 3_000, 3_001, test.n_samples])
}

/// Pass 1 over every shard (the last one in chunks), merged into `m1.state`.
fn first_pass(dir: &Scratch, names: &[(String, String)]) -> Run {
    for (i, (z, y)) in names.iter().enumerate() {
        let state = format!("s{i}.json");
        let mut args = vec!["eval", z, "--labels", y, "--metrics", METRICS, "--save-state", &state];
        if i == 2 {
            args.extend(["--chunk-rows", "999"]);
        }
        dir.calib(&args).ok();
    }
    dir.calib(&[
        "merge",
        "s0.json",
        "s1.json",
        "s2.json",
        "--save-state",
        "m1.state",
        "--format",
        "json",
    ])
}

#[test]
fn shards_pass_after_pass_equal_the_whole_file() {
    let dir = Scratch::new("passes");
    let names = tied_shards(&dir);
    let args = ["eval", "z.npy", "--labels", "y.npy", "--metrics", METRICS, "--format", "json"];
    let whole = metrics_of(&dir.calib(&args));
    let mut run = first_pass(&dir, &names);
    assert!(run.stderr.contains("--resume m1.state --shard I"), "{}", run.stderr);
    assert!(run.stderr.contains("s0.json, s1.json, s2.json"), "{}", run.stderr);
    let mut pass = 2;
    while run.json().get("pending").is_some() {
        assert_eq!(run.json()["next_pass"], pass);
        let resume = format!("m{}.state", pass - 1);
        let mut merge = vec!["merge".to_string(), resume.clone()];
        for (i, (z, y)) in names.iter().enumerate() {
            let (out, shard) = (format!("o{pass}-{i}.state"), (i + 1).to_string());
            let mut args = vec!["eval", z, "--labels", y, "--resume", &resume, "--shard", &shard];
            args.extend(["--save-state", &out, "--format", "json"]);
            if i == 0 {
                args.extend(["--chunk-rows", "512"]);
            }
            let done = dir.calib(&args).json();
            assert_eq!(
                (done["pass"].as_u64(), done["shard"].as_u64()),
                (Some(pass), Some(i as u64 + 1))
            );
            merge.push(out);
        }
        merge.extend([
            "--save-state".into(),
            format!("m{pass}.state"),
            "--format".into(),
            "json".into(),
        ]);
        run = dir.calib(&merge.iter().map(String::as_str).collect::<Vec<_>>());
        pass += 1;
        assert!(pass < 12, "passes do not end");
    }
    assert!(pass >= 3, "no pass was resumed");
    assert_same_metrics(&whole, &metrics_of(&run), 1e-12);
    assert_eq!(run.json()["n"], 10_000);
}

#[test]
fn a_partial_merge_continues_and_bad_passes_are_refused() {
    let dir = Scratch::new("passes-err");
    let names = tied_shards(&dir);
    first_pass(&dir, &names).ok();
    // A tree of merges gives the same state.
    let part = ["merge", "s0.json", "s1.json", "--partial", "--save-state", "p.json"];
    assert!(dir.calib(&part).ok().contains("pass 1"));
    dir.calib(&["merge", "p.json", "s2.json", "--save-state", "m1b.state"]).ok();
    assert_eq!(
        std::fs::read(dir.path("m1.state")).unwrap(),
        std::fs::read(dir.path("m1b.state")).unwrap()
    );
    let (z0, y0) = (names[0].0.as_str(), names[0].1.as_str());
    let (z2, y2) = (names[2].0.as_str(), names[2].1.as_str());
    let resume = |z: &str, y: &str, shard: &str, out: &str| {
        dir.calib(&[
            "eval",
            z,
            "--labels",
            y,
            "--resume",
            "m1.state",
            "--shard",
            shard,
            "--save-state",
            out,
        ])
    };
    // Resuming from the wrong state, or at the wrong place.
    dir.calib(&["eval", z0, "--labels", y0, "--resume", "s0.json", "--save-state", "x.json"])
        .fails_with(&["s0.json", "first-pass state"]);
    dir.calib(&["eval", z0, "--labels", y0, "--resume", "m1.state", "--save-state", "x.json"])
        .fails_with(&["--shard", "3 shards"]);
    resume(z0, y0, "4", "x.json").fails_with(&["--shard 4", "1 to 3"]);
    resume(z0, y0, "3", "x.json").fails_with(&["3000 rows", "shard 3 of 3 had 6999"]);
    // clap's own usage errors (several lines).
    let run = dir.calib(&["eval", z0, "--labels", y0, "--resume", "m1.state", "--metrics", "ece"]);
    assert!(run.code == 2 && run.stderr.contains("--metrics"), "{}", run.stderr);
    // Pass 2 states merged without a shard, without the resumed state, or twice.
    resume(z0, y0, "1", "a.state").ok();
    resume(z2, y2, "3", "c.state").ok();
    dir.calib(&["merge", "m1.state", "a.state", "c.state"])
        .fails_with(&["saw rows 0..3000, 3001..10000"]);
    dir.calib(&["merge", "a.state", "c.state"]).fails_with(&["without the merged state"]);
    dir.calib(&["merge", "m1.state", "a.state", "a.state"]).fails_with(&[
        "a.state",
        "rows 0..3000",
        "twice",
    ]);
    dir.calib(&["merge", "s0.json", "a.state"]).fails_with(&["pass 1", "pass 2"]);
    let run = dir.calib(&["merge", "s0.json", "--partial"]);
    assert!(run.code == 2 && run.stderr.contains("--save-state"), "{}", run.stderr);
}
