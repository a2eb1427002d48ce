// Imported by every benchmark server child: on SIGUSR2 it collects garbage
// (when run with --expose-gc), prints `STATS <json>` with its memory and the
// event-loop delay since the previous report, and resets the histogram.
import { monitorEventLoopDelay } from "node:perf_hooks";

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
process.on("SIGUSR2", () => {
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  const stats = {
    rss: mem.rss,
    heapUsed: mem.heapUsed,
    external: mem.external,
    eldP50: delay.percentile(50) / 1e6,
    eldP99: delay.percentile(99) / 1e6,
    eldMax: delay.max / 1e6,
  };
  delay.reset();
  console.log(`STATS ${JSON.stringify(stats)}`);
});
