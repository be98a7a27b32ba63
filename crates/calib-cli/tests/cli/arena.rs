//! `calib arena`: the JSON contract, win rates recomputed from the per-experiment values, a
//! file that cannot be read as a row with its error, the plot, bad settings.

use crate::common::*;

/// Two dumps and a broken file, three methods: every experiment listed, the broken one with
/// its error; every method's win rate, interval and mean improvement; the win rates follow
/// from the per-experiment NLLs.
#[test]
fn arena_json_contract() {
    let dir = Scratch::new("arena");
    std::fs::write(dir.path("broken.npz"), b"not a zip").unwrap();
    let svg = dir.path("wins.svg");
    let (a, b) = (densenet(), shipped("resnet110_cifar10-lt.npz"));
    let broken = dir.path("broken.npz");
    let args = [
        "arena",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        broken.to_str().unwrap(),
        "--methods",
        "temperature,sms,isotonic",
        "--bootstrap",
        "200",
        "--format",
        "json",
        "--plot",
        svg.to_str().unwrap(),
    ];
    let got = dir.calib(&args).json();
    let experiments = got["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 3);
    assert!(experiments[2]["error"].is_string());
    assert_eq!(experiments[2]["methods"], serde_json::json!({}));
    assert!(experiments[0]["error"].is_null());
    assert_eq!(got["metrics"], serde_json::json!(["nll", "brier", "ece", "accuracy"]));
    let names = ["uncalibrated", "temperature", "sms", "isotonic"];
    // Win rates from the per-experiment NLLs: the share of the three others strictly worse.
    for name in names {
        let mut wins = Vec::new();
        for e in &experiments[..2] {
            let nll = |m: &str| e["methods"][m]["metrics"]["nll"].as_f64().unwrap();
            let beaten = names.iter().filter(|&&o| o != name && nll(o) > nll(name)).count();
            wins.push(beaten as f64 / 3.0);
        }
        let m = &got["methods"][name];
        let want = wins.iter().sum::<f64>() / 2.0;
        assert!((m["win_rate"].as_f64().unwrap() - want).abs() < 1e-12, "{name}");
        let interval = m["win_rate_interval"].as_array().unwrap();
        let (lo, hi) = (interval[0].as_f64().unwrap(), interval[1].as_f64().unwrap());
        assert!(lo <= want + 1e-12 && want <= hi + 1e-12, "{name}: {lo} {want} {hi}");
        assert!(m["mean_improvement"]["nll"].is_f64());
    }
    assert_eq!(got["methods"]["uncalibrated"]["mean_improvement"]["nll"].as_f64(), Some(0.0));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("mean win rate"));
}

#[test]
fn arena_refuses_bad_settings() {
    let dir = Scratch::new("arena-bad");
    let d = densenet();
    let d = d.to_str().unwrap();
    dir.calib(&["arena", d, "--methods", "nope"]).fails_with(&["nope"]);
    dir.calib(&["arena", d, "--metrics", "ecee"]).fails_with(&["ecee"]);
    dir.calib(&["arena", d, "--level", "1.5"]).fails_with(&["--level"]);
    let empty = dir.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    dir.calib(&["arena", empty.to_str().unwrap()]).fails_with(&["no val/test dumps"]);
}
