#pragma once
// What keeps the worker's credentials away from the payloads it runs. A payload is untrusted
// code under the worker's own Unix account: it inherits the environment, can read
// /proc/<worker>/{environ,cmdline,mem} of any process of that account that stays dumpable,
// and can open any file the account can. So the worker reads its credentials once, keeps them
// only in memory, wipes them from its start-up environment and command line, and marks itself
// non-dumpable; the payload's environment is built without util::secret_env_names().
namespace baton::worker {

// First thing in main, before any secret is read: /proc/<pid>/{environ,mem} become root's,
// and ptrace by the same account is refused (PR_SET_DUMPABLE 0; the forked supervisor
// inherits it). Returns false if the kernel refused (the caller logs it).
bool make_undumpable();

// After the flags and environment were parsed: overwrites the values of util::secret_env_names()
// in the process's start-up environment block (what /proc/<pid>/environ shows) and unsets
// them, and overwrites the values of the --api-token/--api-token-file flags in argv (what
// /proc/<pid>/cmdline shows, readable by every local user whatever the dumpable flag).
void wipe_credentials(int argc, char** argv);

}  // namespace baton::worker
