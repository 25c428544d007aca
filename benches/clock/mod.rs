//! The clock the engine benches read: criterion's wall time by default, or,
//! with `COURIER_BENCH_CLOCK=cpu`, the CPU time of the whole process.
//!
//! Why a second clock: the benches run on a shared two-core machine, where
//! wall time also counts the time the bench spent descheduled while other
//! builds ran, so it moves with the load. CPU time counts only the work
//! done, and counts it in every thread (the checker's search runs on worker
//! threads), so ratios taken with it are steadier. It is not a rate a user
//! sees: for a multi-threaded function it is the CPU spent, not the wait.
//! The CPU runs name their groups `<group>-cpu`, so criterion's saved
//! history never compares one clock with the other.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkGroup, Criterion};

/// Which clock `COURIER_BENCH_CLOCK` asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Clock {
    Wall,
    Cpu,
}

fn clock() -> Clock {
    match std::env::var("COURIER_BENCH_CLOCK").as_deref() {
        Err(_) | Ok("" | "wall") => Clock::Wall,
        Ok("cpu") => Clock::Cpu,
        Ok(other) => panic!("COURIER_BENCH_CLOCK is `wall` or `cpu`, not {other:?}"),
    }
}

/// Runs the bench function on the chosen clock, as `criterion_main!` would
/// (command-line filters and options apply). Pass the same generic function
/// twice: `clock::main(bench, bench)`.
pub(crate) fn main(
    wall: impl FnOnce(&mut Criterion<WallTime>),
    cpu: impl FnOnce(&mut Criterion<ProcessCpuTime>),
) {
    match clock() {
        Clock::Wall => {
            let mut criterion = Criterion::default().configure_from_args();
            wall(&mut criterion);
            criterion.final_summary();
        }
        Clock::Cpu => {
            let criterion = Criterion::default().with_measurement(ProcessCpuTime);
            let mut criterion = criterion.configure_from_args();
            cpu(&mut criterion);
            criterion.final_summary();
        }
    }
}

/// A benchmark group named `name` on the wall clock, `name-cpu` on the CPU
/// clock.
pub(crate) fn group<'a, M: Measurement>(
    criterion: &'a mut Criterion<M>,
    name: &str,
) -> BenchmarkGroup<'a, M> {
    match clock() {
        Clock::Wall => criterion.benchmark_group(name),
        Clock::Cpu => criterion.benchmark_group(format!("{name}-cpu")),
    }
}

/// CPU time of every thread of the process (`CLOCK_PROCESS_CPUTIME_ID`).
pub(crate) struct ProcessCpuTime;

/// Wall time's formatter prints durations in nanoseconds; CPU time is one.
static WALL_TIME: WallTime = WallTime;

impl Measurement for ProcessCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        process_cpu_time()
    }

    fn end(&self, start: Duration) -> Duration {
        process_cpu_time().saturating_sub(start)
    }

    fn add(&self, first: &Duration, second: &Duration) -> Duration {
        *first + *second
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        WALL_TIME.formatter()
    }
}

fn process_cpu_time() -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid, writable timespec for the call's duration.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut time) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}
