// script.js: a closed-loop workload for softalloc's exec runner, driven by
// trial.sh through environment variables (k6 run -e NAME=VALUE).
//
// Each virtual user is one emulated user of the paper's closed system: it
// requests a page, waits for it, thinks (exponentially, THINK_SECONDS on
// average; RUBBoS uses 7 s), and repeats. Every metric of an iteration is
// tagged with the trial's phase (ramp-up, run, ramp-down), and always-true
// thresholds make k6 report the run phase's own submetrics in the summary:
// the observation covers the runtime window only. Needs k6 v0.45 or later
// (exec.vu.metrics.tags).
import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';

const USERS = parseInt(__ENV.USERS || '10', 10);
const RAMP_UP = parseFloat(__ENV.RAMP_UP || '30');
const RUNTIME = parseFloat(__ENV.RUNTIME || '60');
const RAMP_DOWN = parseFloat(__ENV.RAMP_DOWN || '0');
const BASE_URL = __ENV.BASE_URL || 'http://localhost:8080';
const PATHS = (__ENV.PATHS || '/').split(',');
const THINK_SECONDS = parseFloat(__ENV.THINK_SECONDS || '7');

export const options = {
  scenarios: {
    users: {
      executor: 'ramping-vus',
      startVUs: 0,
      stages: [
        { duration: `${RAMP_UP}s`, target: USERS },
        { duration: `${RUNTIME}s`, target: USERS },
        { duration: `${RAMP_DOWN}s`, target: 0 },
      ],
      gracefulRampDown: '0s',
    },
  },
  // The statistics k6obs rebuilds the response-time histogram from: the
  // more percentiles, the finer the histogram.
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(10)', 'p(25)', 'p(75)', 'p(90)', 'p(95)', 'p(99)', 'p(99.9)', 'count'],
  thresholds: {
    'http_reqs{phase:run}': ['count>=0'],
    'http_req_duration{phase:run}': ['max>=0'],
    'http_req_failed{phase:run}': ['rate>=0'],
    'iterations{phase:run}': ['count>=0'],
  },
};

export default function () {
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000;
  let phase = 'ramp-down';
  if (elapsed < RAMP_UP) {
    phase = 'ramp-up';
  } else if (elapsed < RAMP_UP + RUNTIME) {
    phase = 'run';
  }
  exec.vu.metrics.tags.phase = phase;

  const path = PATHS[Math.floor(Math.random() * PATHS.length)];
  const res = http.get(BASE_URL + path);
  check(res, { 'status is 2xx/3xx': (r) => r.status >= 200 && r.status < 400 });
  sleep(-THINK_SECONDS * Math.log(1 - Math.random()));
}
