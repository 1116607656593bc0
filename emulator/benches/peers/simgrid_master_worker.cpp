// The datacenter-level SimGrid peer of the peers bench (peers.rs): one
// master places M tasks on N hosts, FIFO and least-loaded, with no
// network. The same workload runs on dcemu's engine in
// peers/master_worker.rs; both must complete the same tasks on the same
// hosts at the same times.
//
// The workload (kept in step with master_worker.rs):
//
// * N hosts of C cores at 1 Gflop/s each; a task takes one core, and the
//   master never places more than C tasks on a host, so nothing is shared
//   and a task of d ns of work runs exactly d ns;
// * task i arrives at the master at a_i (a_i - a_(i-1) = gap(i)) and needs
//   d(i) ns of work, both a SplitMix64 hash of the seed and i;
// * the master keeps arrived tasks in a FIFO queue and places its head on
//   the host with the fewest tasks outstanding (ties to the lowest index)
//   whenever one has fewer than C;
// * placing a task and hearing that it finished each take DELTA ns: a
//   constant control delay, since there is no network to contend for.
//
// As in SimGrid's master/worker tutorial, workers are long-lived actors:
// one per core, on its host, each waiting on its own semaphore for a task
// (there is no network, so no mailboxes: the master writes the task into
// the worker's slot and releases its semaphore). A worker sleeps DELTA
// (the placement travelling), executes d(i) flops on its host's CPU,
// sleeps DELTA (the notice travelling), then hands the master its notice
// through the master's semaphore. The master waits on that semaphore with
// a timeout set to the next arrival, so an arrival costs one wake-up.
// Times the master records are SimGrid's clock rounded to the nanosecond.
// (An actor created per placed task instead, which sleeps, executes,
// sleeps and notifies, was 1.2x slower at 10,000 hosts and 1.3x at 100,000,
// counting the workers' creation: creating an actor allocates and clears
// its stack.)
//
//   usage: simgrid_master_worker HOSTS CORES TASKS MEAN_WORK_NS GAP_NS DELTA_NS SEED [--cfg=...]
//   prints: "simgrid X.Y.Z", "completed N", "checksum X", "makespan_ns T",
//           "wait_ns W", "wall_s S" (the run alone), "build_s B" (the
//           platform and the workers), "peak_rss_kb K".

#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

uint64_t mix(uint64_t x)
{
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

struct Workload {
  uint32_t hosts;
  uint32_t cores;
  uint64_t tasks;
  uint64_t mean_work;
  uint64_t mean_gap;
  uint64_t delta;
  uint64_t seed;

  uint64_t hash(uint64_t i, uint64_t which) const { return mix((seed * 0x9E3779B97F4A7C15ULL) ^ (2 * i + which)); }
  // Nanoseconds from task i-1's arrival (or 0) to task i's.
  uint64_t gap(uint64_t i) const { return 1 + hash(i, 0) % (2 * mean_gap - 1); }
  // Task i's work, in ns on one core.
  uint64_t work(uint64_t i) const { return mean_work / 2 + hash(i, 1) % mean_work; }
};

Workload w;
std::vector<sg4::Host*> hosts;

// What the master hears: a notice that `task` finished on `host`.
struct Notice {
  uint64_t task;
  uint32_t host;
  uint32_t core;
};
std::deque<Notice> inbox;
sg4::SemaphorePtr inbox_ready;

uint64_t now_ns() { return static_cast<uint64_t>(std::llround(sg4::Engine::get_clock() * 1e9)); }

struct Slot {
  sg4::SemaphorePtr wake;
  uint64_t task;
};
std::vector<Slot> slots; // host h's core c at h * cores + c
std::vector<std::vector<uint32_t>> free_cores;
constexpr uint64_t STOP = ~uint64_t{0};

void worker(uint32_t host, uint32_t core)
{
  Slot& slot = slots[uint64_t{host} * w.cores + core];
  for (;;) {
    slot.wake->acquire();
    uint64_t id = slot.task;
    if (id == STOP)
      return;
    sg4::this_actor::sleep_for(static_cast<double>(w.delta) * 1e-9);
    sg4::this_actor::execute(static_cast<double>(w.work(id)));
    sg4::this_actor::sleep_for(static_cast<double>(w.delta) * 1e-9);
    inbox.push_back({id, host, core});
    inbox_ready->release();
  }
}

struct Totals {
  uint64_t completed = 0;
  uint64_t checksum  = 0;
  uint64_t makespan  = 0;
  uint64_t wait      = 0;
} totals;

void master()
{
  // Hosts with fewer than C tasks outstanding, by how many they have.
  std::vector<std::set<uint32_t>> by_load(w.cores);
  for (uint32_t h = 0; h < w.hosts; h++)
    by_load[0].insert(h);
  std::vector<uint32_t> load(w.hosts, 0);
  std::deque<std::pair<uint64_t, uint64_t>> queue; // (task, arrival ns)
  uint64_t next = 0;                               // the next task to arrive
  uint64_t next_at = w.gap(0);

  auto dispatch = [&]() {
    while (!queue.empty()) {
      uint32_t k = 0;
      while (k < w.cores && by_load[k].empty())
        k++;
      if (k == w.cores)
        return;
      uint32_t h = *by_load[k].begin();
      by_load[k].erase(by_load[k].begin());
      load[h] = k + 1;
      if (k + 1 < w.cores)
        by_load[k + 1].insert(h);
      auto [id, arrived] = queue.front();
      queue.pop_front();
      totals.wait += now_ns() - arrived;
      uint32_t c = free_cores[h].back();
      free_cores[h].pop_back();
      Slot& slot = slots[uint64_t{h} * w.cores + c];
      slot.task = id;
      slot.wake->release();
    }
  };

  while (totals.completed < w.tasks) {
    bool timed_out;
    if (next < w.tasks)
      timed_out = inbox_ready->acquire_timeout(static_cast<double>(next_at) * 1e-9 - sg4::Engine::get_clock());
    else {
      inbox_ready->acquire();
      timed_out = false;
    }
    if (timed_out) {
      queue.emplace_back(next, next_at);
      next += 1;
      if (next < w.tasks)
        next_at += w.gap(next);
    } else {
      if (inbox.empty()) {
        std::fprintf(stderr, "simgrid_master_worker: woken with no notice\n");
        std::exit(3);
      }
      Notice n = inbox.front();
      inbox.pop_front();
      free_cores[n.host].push_back(n.core);
      uint32_t k = load[n.host];
      if (k < w.cores)
        by_load[k].erase(n.host);
      load[n.host] = k - 1;
      by_load[k - 1].insert(n.host);
      uint64_t t = now_ns();
      totals.completed += 1;
      totals.checksum += mix(n.task ^ (uint64_t{n.host} << 40) ^ ((t << 24) | (t >> 40)));
      totals.makespan = t;
    }
    dispatch();
  }
  for (Slot& slot : slots) {
    slot.task = STOP;
    slot.wake->release();
  }
}

uint64_t arg(const char* s, const char* what)
{
  char* rest = nullptr;
  unsigned long long v = std::strtoull(s, &rest, 10);
  if (rest == s || *rest != '\0') {
    std::fprintf(stderr, "simgrid_master_worker: %s must be an integer, got '%s'\n", what, s);
    std::exit(2);
  }
  return v;
}

uint64_t peak_rss_kb()
{
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}

} // namespace

int main(int argc, char* argv[])
{
  auto started = std::chrono::steady_clock::now();
  sg4::Engine e(&argc, argv);
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s HOSTS CORES TASKS MEAN_WORK_NS GAP_NS DELTA_NS SEED [--cfg=...]\n", argv[0]);
    return 2;
  }
  w.hosts     = static_cast<uint32_t>(arg(argv[1], "HOSTS"));
  w.cores     = static_cast<uint32_t>(arg(argv[2], "CORES"));
  w.tasks     = arg(argv[3], "TASKS");
  w.mean_work = arg(argv[4], "MEAN_WORK_NS");
  w.mean_gap  = arg(argv[5], "GAP_NS");
  w.delta     = arg(argv[6], "DELTA_NS");
  w.seed      = arg(argv[7], "SEED");
  if (w.hosts == 0 || w.cores == 0 || w.mean_work < 2 || w.mean_gap == 0) {
    std::fprintf(stderr, "simgrid_master_worker: HOSTS, CORES, GAP_NS must be > 0 and MEAN_WORK_NS > 1\n");
    return 2;
  }

  // No links and no routes: nothing is sent over a network.
  auto* zone = sg4::create_empty_zone("datacenter");
  sg4::Host* master_host = zone->create_host("master", 1e9)->seal();
  hosts.reserve(w.hosts);
  for (uint32_t h = 0; h < w.hosts; h++)
    hosts.push_back(zone->create_host("host-" + std::to_string(h), 1e9)->set_core_count(w.cores)->seal());
  zone->seal();
  inbox_ready = sg4::Semaphore::create(0);
  slots.resize(uint64_t{w.hosts} * w.cores);
  free_cores.resize(w.hosts);
  for (uint32_t h = 0; h < w.hosts; h++)
    for (uint32_t c = 0; c < w.cores; c++) {
      slots[uint64_t{h} * w.cores + c].wake = sg4::Semaphore::create(0);
      free_cores[h].push_back(w.cores - 1 - c);
      sg4::Actor::create("worker", hosts[h], worker, h, c);
    }
  sg4::Actor::create("master", master_host, master);
  std::chrono::duration<double> build = std::chrono::steady_clock::now() - started;

  auto run_started = std::chrono::steady_clock::now();
  e.run();
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - run_started;

  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  std::printf("simgrid %d.%d.%d\n", major, minor, patch);
  std::printf("completed %" PRIu64 "\n", totals.completed);
  std::printf("checksum %" PRIu64 "\n", totals.checksum);
  std::printf("makespan_ns %" PRIu64 "\n", totals.makespan);
  std::printf("wait_ns %" PRIu64 "\n", totals.wait);
  std::printf("wall_s %.6f\n", wall.count());
  std::printf("build_s %.6f\n", build.count());
  std::printf("peak_rss_kb %" PRIu64 "\n", peak_rss_kb());
  return 0;
}
