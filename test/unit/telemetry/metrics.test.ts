import { metricsText, setEngineStateSource, type EngineState } from '../../../lib/telemetry/metrics';

describe('metrics exposition', () => {
  afterEach(() => setEngineStateSource(undefined));

  it('has every series with its labels, the state gauges from one cached read', async () => {
    let reads = 0;
    const state: EngineState = {
      pendingExports: new Map([['HR target', 3]]),
      connectorSpaceErrors: new Map([['HR target', 1]]),
      meshObjects: new Map([['User', 42]]),
      lastHeartbeat: new Map([['node-a', Date.now() - 4_500]]),
    };
    setEngineStateSource(async () => {
      reads++;
      return state;
    });
    const first = (await metricsText()).body;
    const second = (await metricsText()).body;
    expect(reads).toBe(1);
    const meshsync = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith('meshsync_') && !l.startsWith('meshsync_instance_heartbeat_age'))
        .join('\n');
    expect(meshsync(second)).toBe(meshsync(first));
    for (const name of ['meshsync_runs_total', 'meshsync_run_duration_seconds', 'meshsync_objects_processed_total', 'meshsync_http_request_duration_seconds']) {
      expect(first).toContain(`# TYPE ${name} `);
    }
    expect(first).toContain('meshsync_pending_exports{connector="HR target"} 3');
    expect(first).toContain('meshsync_connector_space_errors{connector="HR target"} 1');
    expect(first).toContain('meshsync_mesh_objects{object_type="User"} 42');
    // The age at the scrape, from the heartbeat read (not the age when it was read).
    const age = Number(/^meshsync_instance_heartbeat_age_seconds\{instance="node-a"\} (\S+)$/m.exec(second)![1]);
    expect(age).toBeGreaterThanOrEqual(4.5);
    expect(age).toBeLessThan(10);
    expect(first).toContain('process_cpu_seconds_total');
  });

  it('answers without state samples when the state cannot be read', async () => {
    setEngineStateSource(async () => {
      throw new Error('storage down');
    });
    const body = (await metricsText()).body;
    expect(body).toContain('# TYPE meshsync_pending_exports gauge');
    expect(body).not.toMatch(/^meshsync_pending_exports\{/m);
  });

  it('shows no mesh objects before the mesh is loaded', async () => {
    setEngineStateSource(async () => ({ pendingExports: new Map(), connectorSpaceErrors: new Map(), meshObjects: null, lastHeartbeat: new Map() }));
    expect((await metricsText()).body).not.toMatch(/^meshsync_mesh_objects\{/m);
  });
});
