// The CPU budget of a query's session functions: calls are charged, and
// once a second's worth is spent the runner waits for the bucket to refill.

import { describe, expect, it } from 'vitest';
import { FunctionBudget } from '../../src/sessions/function-budget.js';

describe('function budget - pacing session functions', () => {
  it('charges each call and asks for a wait once the bucket is spent, shorter as time passes', () => {
    let now = 0;
    const budget = new FunctionBudget(100, () => now);
    expect(budget.charged).toBe(false);
    budget.charge(() => (now += 60));
    expect(budget.waitMs()).toBe(0);
    budget.charge(() => (now += 90));
    // 100 - 60 - 90 + 150 ms × 0.1 refill = -35 ms of debt: 350 ms at 100 ms per second.
    expect(budget.waitMs()).toBe(350);
    now += 350;
    expect(budget.waitMs()).toBe(0);
    expect(budget.charged).toBe(true);
  });

  it('never saves more than one second of budget', () => {
    let now = 0;
    const budget = new FunctionBudget(50, () => now);
    now += 60_000;
    budget.charge(() => (now += 120));
    // A minute idle earned one second's worth (50 ms), not 3,000: the 120 ms call leaves debt.
    expect(budget.waitMs()).toBe(1_280);
  });

  it('charges a call that throws', () => {
    let now = 0;
    const budget = new FunctionBudget(10, () => now);
    expect(() => budget.charge(() => {
      now += 30;
      throw new Error('boom');
    })).toThrow('boom');
    // 10 - 30 = -20 ms, 0.3 ms earned during the call: 1,970 ms at 10 ms per second.
    expect(budget.waitMs()).toBe(1_970);
  });
});
