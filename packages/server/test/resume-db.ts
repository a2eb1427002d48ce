import { RESUME_MIGRATION } from "../src/store/resume-migration.js";
import { Store } from "../src/store/store.js";

/**
 * A real store in `dir` with the resume/queue tables. Until the step joins
 * `MIGRATIONS` (when the foundations land), it is applied here on first open;
 * reopening the same directory is a restart.
 */
export function openStore(dir: string): Store {
  const store = new Store(dir);
  const has = store.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'replay_counters'").get();
  if (!has) store.db.exec(RESUME_MIGRATION);
  return store;
}

/** A conversation row, so tables that reference conversations accept it. */
export function addConversation(store: Store, id: string): void {
  store.createConversation({ id, name: id, session_id: null, source: "test", created_at: 0 });
}
