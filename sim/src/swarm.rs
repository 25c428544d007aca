//! Swarm testing (TigerBeetle's VOPR `options_swarm`): each seed first draws
//! its own workload mix, so some runs hammer cancels, some never steer, some
//! run long with a tiny id pool. A single fixed mix would leave whole regions
//! of the state space rare; turning features off per seed makes the rest
//! common. The configuration goes into every race report.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::prng::Prng;

/// How often each kind of input is drawn (relative integer weights).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputWeights {
    /// `send (next-turn, wake)`.
    pub followup: u32,
    /// `send (next-step, wake)`.
    pub steer: u32,
    /// `send (next-step, no-wake)`.
    pub inject: u32,
    /// `send (next-turn, no-wake)`.
    pub queue: u32,
    /// `append`.
    pub append: u32,
    /// `prepend`.
    pub prepend: u32,
    /// `replace`.
    pub replace: u32,
    /// `remove`.
    pub remove: u32,
    /// A raw `splice`.
    pub splice: u32,
    /// `cancel` (keep-inbox or not, see [`Swarm::keep_inbox_percent`]).
    pub cancel: u32,
    /// `dispose` (final, so usually off).
    pub dispose: u32,
    /// `when-idle`.
    pub when_idle: u32,
    /// The completion the driver awaits (or a refused one when idle).
    pub completion: u32,
    /// A completion for a point the driver is not awaiting (always refused).
    pub stray_completion: u32,
}

/// How the pre-step listener decides.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreStepWeights {
    /// `pass`.
    pub pass: u32,
    /// `enter [ids]`: a reordered subset of the batch, maybe with context.
    pub enter: u32,
    /// `reject`.
    pub reject: u32,
    /// `fail`.
    pub fail: u32,
}

/// How model steps end.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepWeights {
    /// `completed`.
    pub completed: u32,
    /// `max-tokens`.
    pub max_tokens: u32,
    /// `tool-calls`.
    pub tool_calls: u32,
    /// `fail`.
    pub fail: u32,
}

/// One seed's workload knobs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Swarm {
    /// Random inputs in the safety phase (the liveness phase follows).
    pub inputs_max: u32,
    /// Distinct message ids the run draws from (small pools force re-sends
    /// and duplicate refusals).
    pub pool_size: u32,
    /// Input kind mix.
    pub inputs: InputWeights,
    /// Percent of cancels that keep the inbox.
    pub keep_inbox_percent: u32,
    /// Percent of inserted messages with a `plugin` source instead of `user`.
    pub plugin_percent: u32,
    /// Pre-step decision mix.
    pub pre_step: PreStepWeights,
    /// Step outcome mix.
    pub step: StepWeights,
    /// Percent of safety-phase draws that crash and resume the agent
    /// instead of feeding an input (SPEC §11); 0 when the seed draws none
    /// or restarts are off. A report of format 1 has no restarts.
    #[serde(default)]
    pub restart_percent: u32,
}

/// The largest id pool a seed may draw (ids `A` to `H`).
pub(crate) const POOL_SIZE_MAX: u32 = 8;

impl Swarm {
    /// Draws a configuration. Each optional feature is off with some
    /// probability, so the mixes differ in kind, not only in degree.
    pub fn draw(prng: &mut Prng) -> Swarm {
        let inputs_max = 8 << prng.below(6);
        let inputs_max = inputs_max + prng.between(0, inputs_max);
        let pool_size = prng.between(1, POOL_SIZE_MAX);
        let inputs = InputWeights {
            followup: weight(prng, (1, 4), 6),
            steer: weight(prng, (1, 4), 6),
            inject: weight(prng, (1, 3), 4),
            queue: weight(prng, (1, 2), 3),
            append: weight(prng, (1, 2), 2),
            prepend: weight(prng, (1, 2), 2),
            replace: weight(prng, (1, 2), 2),
            remove: weight(prng, (1, 2), 2),
            splice: weight(prng, (1, 2), 2),
            cancel: weight(prng, (1, 3), 3),
            dispose: weight(prng, (7, 8), 1),
            when_idle: weight(prng, (1, 2), 2),
            completion: prng.between(4, 16),
            stray_completion: weight(prng, (1, 2), 1),
        };
        let keep_inbox_percent = prng.between(0, 100);
        let plugin_percent = weight(prng, (1, 2), 50);
        let pre_step = PreStepWeights {
            pass: prng.between(1, 8),
            enter: weight(prng, (1, 3), 4),
            reject: weight(prng, (1, 2), 2),
            fail: weight(prng, (1, 2), 2),
        };
        let step = StepWeights {
            completed: prng.between(1, 8),
            max_tokens: weight(prng, (1, 2), 3),
            tool_calls: weight(prng, (1, 3), 6),
            fail: weight(prng, (1, 2), 2),
        };
        Swarm {
            inputs_max,
            pool_size,
            inputs,
            keep_inbox_percent,
            plugin_percent,
            pre_step,
            step,
            restart_percent: 0,
        }
    }

    /// The configuration with its restart rate drawn from `faults`, the
    /// seed's fault stream: the knobs above and the input stream are the
    /// seed's own whether restarts are on or off (and as they were before
    /// restarts existed).
    pub fn with_restart_rate(self, faults: &mut Prng) -> Swarm {
        Swarm {
            restart_percent: weight(faults, (1, 2), 5),
            ..self
        }
    }

    /// The same configuration with restarts off (`--no-restarts`, and
    /// workloads kept inside a model checker bound, which has none).
    pub fn without_restarts(self) -> Swarm {
        Swarm {
            restart_percent: 0,
            ..self
        }
    }
}

/// Zero with probability `off`, else uniform in `1..=max`.
fn weight(prng: &mut Prng, off: (u32, u32), max: u32) -> u32 {
    if prng.chance(off.0, off.1) {
        0
    } else {
        prng.between(1, max)
    }
}

/// One line of `key=value` knobs, for the banner of a single-seed run.
impl fmt::Display for Swarm {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inputs;
        let p = &self.pre_step;
        let s = &self.step;
        write!(
            formatter,
            "inputs_max={} pool_size={} keep_inbox={}% plugin={}% \
             weights=followup:{},steer:{},inject:{},queue:{},append:{},prepend:{},\
             replace:{},remove:{},splice:{},cancel:{},dispose:{},when_idle:{},\
             completion:{},stray_completion:{} \
             pre_step=pass:{},enter:{},reject:{},fail:{} \
             step=completed:{},max_tokens:{},tool_calls:{},fail:{} \
             restarts={}%",
            self.inputs_max,
            self.pool_size,
            self.keep_inbox_percent,
            self.plugin_percent,
            i.followup,
            i.steer,
            i.inject,
            i.queue,
            i.append,
            i.prepend,
            i.replace,
            i.remove,
            i.splice,
            i.cancel,
            i.dispose,
            i.when_idle,
            i.completion,
            i.stray_completion,
            p.pass,
            p.enter,
            p.reject,
            p.fail,
            s.completed,
            s.max_tokens,
            s.tool_calls,
            s.fail,
            self.restart_percent,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_stay_in_their_ranges_and_features_switch_off() {
        let mut dispose_on = 0;
        let mut steer_off = 0;
        let mut restarts_off = 0;
        for seed in 0..400 {
            let swarm = Swarm::draw(&mut Prng::new(seed)).with_restart_rate(&mut Prng::new(!seed));
            assert!((8..=512).contains(&swarm.inputs_max), "{swarm}");
            assert!((1..=POOL_SIZE_MAX).contains(&swarm.pool_size));
            assert!(swarm.inputs.completion >= 4);
            assert!(swarm.pre_step.pass >= 1 && swarm.step.completed >= 1);
            assert!(swarm.keep_inbox_percent <= 100);
            dispose_on += u32::from(swarm.inputs.dispose > 0);
            steer_off += u32::from(swarm.inputs.steer == 0);
            assert!(swarm.restart_percent <= 5);
            restarts_off += u32::from(swarm.restart_percent == 0);
        }
        assert!(
            (20..=90).contains(&dispose_on),
            "dispose on in {dispose_on}/400"
        );
        assert!(
            (60..=150).contains(&steer_off),
            "steer off in {steer_off}/400"
        );
        assert!(
            (140..=260).contains(&restarts_off),
            "restarts off in {restarts_off}/400"
        );
    }

    #[test]
    fn the_configuration_round_trips_through_json() {
        let swarm = Swarm::draw(&mut Prng::new(3));
        let json = serde_json::to_string(&swarm).expect("serializable");
        let back: Swarm = serde_json::from_str(&json).expect("parses back");
        assert_eq!(back, swarm);
    }
}
