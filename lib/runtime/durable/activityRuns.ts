import { WorkCache, type ActivityResult } from './workCache';
import { errorText, groupResults, MAX_RESULT_CHARS } from './workGroups';
import type { WorkMessage } from './store';

/**
 * Activity work items run through the host, and their results stored: results finishing within a few
 * milliseconds share one transaction, then the work items are deleted (a group row records its finished task
 * ids until every item is done). A work item goes only after its result is stored (at-least-once); the
 * orchestration takes the result as soon as it is stored, while the item is being deleted.
 */
export abstract class ActivityRunner extends WorkCache {
  /** Activity functions executing right now (the concurrency limit counts these, not results awaiting storage). */
  protected executingActivities = 0;
  /** Finished activities whose result messages are written (and work items deleted) in one batch. */
  private completions: { item: WorkMessage; msg: WorkMessage }[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** A flush is chained behind the running one and will take every completion present when it starts. */
  private flushQueued = false;

  protected async activity(item: WorkMessage): Promise<void> {
    let r: ActivityResult;
    try {
      r = await this.host.invokeActivity(item.name ?? '', item.data, item.instanceId);
    } catch (err) {
      r = { ok: false, reason: `Activity function '${item.name}' failed: ${errorText(err)}`, details: '' };
    } finally {
      this.executingActivities--;
    }
    if (r.ok && r.result.length > MAX_RESULT_CHARS) {
      r = {
        ok: false,
        reason: `Activity function '${item.name}' failed: its result is ${r.result.length} characters of JSON, more than the ${MAX_RESULT_CHARS} a task hub row can hold.`,
        details: '',
      };
    }
    const now = Date.now();
    const msg: WorkMessage = {
      pk: 'o',
      rk: `r.${item.executionId}.${item.taskId}`,
      instanceId: item.instanceId,
      kind: r.ok ? 'taskCompleted' : 'taskFailed',
      executionId: item.executionId,
      taskId: item.taskId,
      enqueuedAt: now,
      visibleAt: now,
      ...(r.ok ? { data: r.result } : { reason: r.reason, details: r.details }),
    };
    this.completions.push({ item, msg });
    // Results finishing within a few milliseconds share one transaction (and one for the deletes).
    if (this.completions.length >= 100) void this.flushCompletions();
    else if (!this.flushTimer) this.flushTimer = setTimeout(() => void this.flushCompletions(), 3);
    this.kick();
  }

  protected flushCompletions(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.flushQueued && this.flushing) return this.flushing;
    this.flushQueued = true;
    const run = async (): Promise<void> => {
      this.flushQueued = false;
      const batch = this.completions;
      this.completions = [];
      if (!batch.length) return;
      const messages = groupResults(batch.map((c) => c.msg));
      try {
        await this.store.putWork(messages);
      } catch (err) {
        this.host.log('error', `Durable task hub '${this.store.hubName}': storing ${batch.length} activity result(s) failed, will retry: ${errorText(err)}`);
        const h = setTimeout(() => {
          this.timerHandles.delete(h);
          this.completions.push(...batch);
          void this.flushCompletions();
        }, 1000);
        this.timerHandles.add(h);
        return;
      }
      // The results are stored: the orchestrations go on from them now, while their work items are settled (a
      // poll meanwhile does not take an item again: it stays among the running ones until it is settled).
      for (const m of messages) this.accept(m);
      this.kick();
      // Work items whose result is stored: single rows are deleted, groups record the task ids as done
      // (and are deleted once every item is), all in one transaction where possible.
      const deletes: string[] = [];
      const touched = new Set<string>();
      for (const c of batch) {
        const g = this.itemGroup.get(c.item.rk);
        const group = g === undefined ? undefined : this.activityGroups.get(g);
        if (g === undefined || !group) {
          deletes.push(c.item.rk);
          continue;
        }
        group.remaining.delete(c.item.rk);
        if (c.item.taskId !== undefined) group.done.push(c.item.taskId);
        touched.add(g);
      }
      const finished = [...touched].filter((g) => this.activityGroups.get(g)?.remaining.size === 0);
      const partial = [...touched].filter((g) => !finished.includes(g)).map((g) => ({ rk: g, taskIds: [...(this.activityGroups.get(g)?.done ?? [])] }));
      try {
        await this.store.settleWork('a', [...deletes, ...finished], partial);
      } catch (err) {
        // The results are stored: a leftover work item only means the activity may run once more.
        this.host.log('warning', `Durable task hub '${this.store.hubName}': deleting activity work items failed: ${errorText(err)}`);
      }
      this.tombstone(
        'a',
        batch.map((c) => c.item.rk),
      );
      for (const g of finished) this.dropActivityGroup(g);
      for (const c of batch) {
        this.runningActivities.delete(c.item.rk);
        this.itemGroup.delete(c.item.rk);
      }
      this.kick();
    };
    const p = (this.flushing ?? Promise.resolve()).then(run);
    this.flushing = p;
    this.track(p);
    return p;
  }
}
