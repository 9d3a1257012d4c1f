/* eslint-disable @typescript-eslint/no-explicit-any */
import { api, type Page } from '../api';
import { ErrorBox, Table, useLoad, When } from '../ui';

/**
 * Late leavers (GET /leavers?state=late): people whose delete or disable in a target is past the target's
 * deadline and not confirmed. Shown first on the overview, and only when there are any.
 */
export function LateLeavers() {
  const late = useLoad<Page<any>>(() => api('GET', 'leavers', { query: { state: 'late', take: 50 } }), []);
  if (late.error) return <ErrorBox error={late.error} />;
  if (!late.data || late.data.totalCount === 0) return null;
  return (
    <div class="card" role="region" aria-labelledby="late-leavers-title">
      <h2 id="late-leavers-title">Late leavers ({late.data.totalCount})</h2>
      <p class="muted">Still enabled in a target past its deadline: the delete or disable is not confirmed yet.</p>
      <Table
        caption="Late leavers"
        skeletonRows={1}
        columns={[
          { label: 'Person', cell: (l: any) => l.displayName },
          { label: 'Target', cell: (l: any) => l.connectorName ?? l.connectorId },
          { label: 'Operation', cell: (l: any) => l.operation },
          { label: 'Seen', cell: (l: any) => <When value={l.seenOn} /> },
          { label: 'Deadline', cell: (l: any) => <When value={l.deadlineOn} /> },
          { label: 'Sent', cell: (l: any) => (l.sentOn ? <When value={l.sentOn} /> : 'not yet') },
        ]}
        rows={late.data.items}
        loading={late.loading}
        empty="No late leaver."
        rowKey={(l: any) => `${l.connectorId}|${l.meshObjectId}`}
      />
    </div>
  );
}
