/**
 * The run summary table: one row per region and config.
 */

import { summarizeRuns } from '../../components/RunTable';
import { run } from '../fixtures';

describe('summarizeRuns', () => {
  it('groups per region and config with count, mean, min, max and throttled', () => {
    const throttled = {
      sm_clock_mhz: 500,
      mem_clock_mhz: null,
      temperature_c: 90,
      power_w: null,
      clock_event_reasons: ['thermal slowdown'],
      throttled: true
    };
    const runs = [
      run(1, 1, { annotation: 'a', duration_ns: 100 }),
      run(2, 1, { annotation: 'b', duration_ns: 10 }),
      run(3, 1, { annotation: 'a', duration_ns: 300, telemetry: throttled }),
      run(4, 1, {
        annotation: 'a',
        duration_ns: 50,
        config_index: 1,
        config: { n: 2 }
      })
    ];

    const summary = summarizeRuns(runs);

    expect(summary.map(s => [s.annotation, s.configIndex, s.runs])).toEqual([
      ['a', 0, 2],
      ['b', 0, 1],
      ['a', 1, 1]
    ]);
    expect(summary[0]).toMatchObject({
      meanNs: 200,
      minNs: 100,
      maxNs: 300,
      throttled: 1
    });
  });
});
