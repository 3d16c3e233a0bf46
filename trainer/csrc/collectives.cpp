// libtorch's collective layer (c10d) for data-parallel training: a store for the ranks to meet
// (TCPStore served by rank 0, or FileStore on a directory every rank sees), a Gloo process group over
// it, and the three collectives training needs: all-reduce, broadcast, barrier. Gloo is compiled into
// libtorch_cpu; ProcessGroupGloo.hpp needs Gloo's own headers only to declare types, and the wheel
// ships none, so `csrc/gloo` holds those of the Gloo revision torch 2.13 was built with (see its
// README). Every collective waits at most the group's timeout: a rank that died or never came makes
// the others fail with words instead of hanging. No C++ exception crosses into Rust.
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

struct Group {
  // The store outlives the group that rendezvoused through it (the group keeps only a prefixed view).
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::chrono::milliseconds timeout;
};

void write_error(char *err, size_t len, const std::string &what) {
  if (err != nullptr && len > 0) {
    std::snprintf(err, len, "%s", what.c_str());
  }
}

// Runs `f`, turning an exception into -1 and its message (c10::Error without libtorch's C++ backtrace).
template <class F> int guarded(char *err, size_t len, F &&f) {
  try {
    f();
    return 0;
  } catch (const c10::Error &e) {
    write_error(err, len, e.what_without_backtrace());
  } catch (const std::exception &e) {
    write_error(err, len, e.what());
  } catch (...) {
    write_error(err, len, "an unknown C++ exception");
  }
  return -1;
}

Group &group_of(void *group) { return *static_cast<Group *>(group); }

// Blocks until the collective ends; Work::wait rethrows its failure and throws on timeout.
void finish(const Group &g, const c10::intrusive_ptr<c10d::Work> &work) { work->wait(g.timeout); }

} // namespace

extern "C" {

// Joins a group of `world` ranks as `rank`. `file` non-null: a FileStore at that path; else a TCPStore
// at `host:port`, which rank 0 serves. Gloo's connections use, by `link`: 0 the address `link_name`
// resolves to, 1 the interface `link_name`, 2 the address of this machine's hostname. Returns 0 and the
// group in `out`, or -1 with the reason in `err`.
int paddock_group_join(const char *file, const char *host, uint16_t port, int link,
                       const char *link_name, int rank, int world, int64_t timeout_ms, void **out,
                       char *err, size_t err_len) {
  return guarded(err, err_len, [&] {
    const auto timeout = std::chrono::milliseconds(timeout_ms);
    c10::intrusive_ptr<c10d::Store> store;
    if (file != nullptr) {
      store = c10::make_intrusive<c10d::FileStore>(file, world);
      store->setTimeout(timeout);
    } else {
      c10d::TCPStoreOptions options;
      options.port = port;
      options.isServer = rank == 0;
      options.numWorkers = world;
      options.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(host, options);
    }
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    switch (link) {
    case 1:
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(link_name));
      break;
    case 2:
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      break;
    default:
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(link_name));
    }
    auto scoped = c10::make_intrusive<c10d::PrefixStore>("paddock", store);
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(scoped, rank, world, options);
    *out = new Group{store, group, timeout};
  });
}

void paddock_group_free(void *group) { delete static_cast<Group *>(group); }

// Sums `tensor` (an at::Tensor*, what tch's C_tensor is) over the ranks, in place.
int paddock_group_all_reduce_sum(void *group, void *tensor, char *err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto &g = group_of(group);
    std::vector<at::Tensor> tensors{*static_cast<at::Tensor *>(tensor)};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    finish(g, g.group->allreduce(tensors, options));
  });
}

// Overwrites `tensor` on every rank with rank `root`'s.
int paddock_group_broadcast(void *group, void *tensor, int root, char *err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto &g = group_of(group);
    std::vector<at::Tensor> tensors{*static_cast<at::Tensor *>(tensor)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    finish(g, g.group->broadcast(tensors, options));
  });
}

// Returns once every rank has reached it.
int paddock_group_barrier(void *group, char *err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto &g = group_of(group);
    finish(g, g.group->barrier(c10d::BarrierOptions()));
  });
}

} // extern "C"
