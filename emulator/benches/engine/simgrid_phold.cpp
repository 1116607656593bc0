// The engine bench's SimGrid peer: the token PHOLD of phold.rs on SimGrid's
// S4U interface. Compiled and run by the engine bench (engine.rs) only
// where SimGrid is installed; see docs/performance.md.
//
// Every token is an S4U actor. It sleeps its latency and lands on the next
// LP, whose event count and order-free sum it updates, then picks the next
// hop. The next LP and the latency are the same hash of the token's
// identity and hop count as in phold.rs, and virtual time is kept in
// integer nanoseconds beside SimGrid's clock (a double in seconds), so
// every LP must end with the same count and sum as dcemu's runs. The LPs
// are plain records: nothing is sent, one sleep per event.
//
//   usage: simgrid_phold ACTORS FANOUT LOOKAHEAD_NS END_NS [--cfg=...]
//   prints: "simgrid X.Y.Z", "events N", "wall_s S" (the run alone, not
//           building it), then one line "lp I COUNT SUM" per LP (SUM: the
//           sum >> 32).

#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

struct Lp {
  uint64_t received = 0;
  uint64_t sum      = 0;
};

struct Model {
  uint32_t n;
  uint64_t lookahead;
  uint64_t end;
  std::vector<Lp> lps;
};

Model model;

// A token on the wire: its identity in the high 24 bits, its hop count in
// the low 40 (phold.rs `payload`).
uint64_t payload(uint64_t token, uint64_t hop) { return (token << 40) | (hop & ((uint64_t{1} << 40) - 1)); }

// SplitMix64's finaliser (phold.rs `mix`).
uint64_t mix(uint64_t x)
{
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// One token: from LP `me` at time 0, hop after hop until the next arrival
// would be at or after the end (phold.rs `TokenHopper::send_on`).
void token(uint64_t id, uint32_t me)
{
  uint64_t now = 0;
  uint64_t wire = payload(id, 0);
  for (;;) {
    uint64_t h       = mix(wire);
    uint32_t dst     = static_cast<uint32_t>((me + 1 + h % (model.n - 1)) % model.n);
    uint64_t latency = model.lookahead + (h >> 32) % (3 * model.lookahead);
    uint64_t at      = now + latency;
    if (at >= model.end)
      return;
    sg4::this_actor::sleep_for(static_cast<double>(latency) * 1e-9);
    Lp& lp = model.lps[dst];
    lp.received += 1;
    lp.sum += mix(wire ^ at);
    me   = dst;
    now  = at;
    wire = payload(wire >> 40, (wire & ((uint64_t{1} << 40) - 1)) + 1);
  }
}

uint64_t arg(const char* s, const char* what)
{
  char* rest = nullptr;
  unsigned long long v = std::strtoull(s, &rest, 10);
  if (rest == s || *rest != '\0') {
    std::fprintf(stderr, "simgrid_phold: %s must be an integer, got '%s'\n", what, s);
    std::exit(2);
  }
  return v;
}

} // namespace

int main(int argc, char* argv[])
{
  sg4::Engine e(&argc, argv); // takes the --cfg=... arguments out of argv
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s ACTORS FANOUT LOOKAHEAD_NS END_NS [--cfg=...]\n", argv[0]);
    return 2;
  }
  model.n         = static_cast<uint32_t>(arg(argv[1], "ACTORS"));
  uint64_t fanout = arg(argv[2], "FANOUT");
  model.lookahead = arg(argv[3], "LOOKAHEAD_NS");
  model.end       = arg(argv[4], "END_NS");
  if (model.n < 2 || model.lookahead == 0) {
    std::fprintf(stderr, "simgrid_phold: need ACTORS >= 2 and LOOKAHEAD_NS > 0\n");
    return 2;
  }
  model.lps.resize(model.n);

  // One host: tokens only sleep, so no resource is shared.
  auto* zone = sg4::create_empty_zone("phold");
  sg4::Host* host = zone->create_host("lp-host", 1e9)->seal();
  zone->seal();
  for (uint32_t me = 0; me < model.n; me++)
    for (uint64_t k = 0; k < fanout; k++) {
      uint64_t id = uint64_t{me} * fanout + k;
      sg4::Actor::create("token", host, token, id, me);
    }

  auto started = std::chrono::steady_clock::now();
  e.run();
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - started;

  uint64_t events = 0;
  for (const Lp& lp : model.lps)
    events += lp.received;
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  std::printf("simgrid %d.%d.%d\n", major, minor, patch);
  std::printf("events %" PRIu64 "\n", events);
  std::printf("wall_s %.6f\n", wall.count());
  for (uint32_t i = 0; i < model.n; i++)
    std::printf("lp %" PRIu32 " %" PRIu64 " %" PRIu64 "\n", i, model.lps[i].received, model.lps[i].sum >> 32);
  return 0;
}
