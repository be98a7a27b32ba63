//! The trace's global log, in a process of its own: tracing is on for every thread while it
//! runs, so other tests opening parallel sections beside it would add to its sums.

use std::time::Duration;

use calib_kernels::trace::{begin, end, section, set_tracing, step, take};

#[test]
fn a_stretch_splits_into_parallel_and_serial_time() {
    let ms = Duration::from_millis;
    set_tracing(true);
    begin("pass 1");
    step("read", || std::thread::sleep(ms(10)));
    step("read", || std::thread::sleep(ms(10)));
    // A step's parallel sections are not its serial time.
    step("checks", || section().busy(0, || std::thread::sleep(ms(30))));
    {
        let section = section();
        std::thread::scope(|scope| {
            let s = &section;
            scope.spawn(move || s.busy(1, || std::thread::sleep(ms(30))));
            s.busy(0, || std::thread::sleep(ms(30)));
        });
    }
    begin("pass 2");
    end();
    set_tracing(false);
    let stretches = take();
    assert_eq!(stretches.len(), 2);
    let s = &stretches[0];
    assert!(s.name == "pass 1" && s.busy.len() == 2, "{s:?}");
    assert!(s.parallel >= ms(60) && s.serial() >= ms(20), "{s:?}");
    assert!(s.one_thread() >= ms(110));
    let fraction = s.serial_fraction();
    assert!(fraction > 0.05 && fraction < 0.6, "{fraction}");
    assert!(s.predicted(2) < s.one_thread() && s.predicted(1) == s.one_thread());
    assert_eq!(s.steps.len(), 2);
    assert!(s.steps[0].0 == "read" && s.steps[0].1 >= ms(20), "{s:?}");
    assert!(s.steps[1].0 == "checks" && s.steps[1].1 < ms(15), "{s:?}");
    assert_eq!(stretches[1].name, "pass 2");
}
