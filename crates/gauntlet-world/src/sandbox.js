// What every gauntlet sandbox takes away, for world handlers and custom evaluators alike: the
// clock and unseeded randomness fail loudly (a verdict or a world must not depend on them).
(function () {
  "use strict";
  const G = globalThis;
  G.Date = function () { throw new Error("Date is not available in gauntlet's sandbox (world handlers have ctx.now)"); };
  G.Date.now = G.Date.parse = G.Date.UTC = G.Date;
  Math.random = function () { throw new Error("Math.random is not available in gauntlet's sandbox (world handlers have ctx.random())"); };
  // A clock by another name, and garbage-collector timing: both make results depend on the run.
  for (const name of ["performance", "WeakRef", "FinalizationRegistry"]) {
    try { delete G[name]; } catch (e) { /* not configurable: overwritten below */ }
    if (name in G) { try { G[name] = undefined; } catch (e) { /* left as is; the test says so */ } }
  }
})();
