// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The IA (interface adapter) handle object: one opened dat.conf entry, the transport its params
// chose, its asynchronous EVD, the memory key table, the objects the consumer created on it, and
// the attributes it reports through dat_ia_query.
#pragma once

#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "base/mutex.h"
#include "base/deferred_calls.h"
#include "base/status.h"
#include "core/counters.h"
#include "core/end_reports.h"
#include "core/evd.h"
#include "core/handle.h"
#include "core/ia_attributes.h"
#include "core/memory_table.h"
#include "evd/progress_hook.h"
#include "transport/ia_params.h"
#include "transport/transport.h"

namespace softdat::core {

// The largest SRQ this IA makes: what srq/ supports and the transport can carry.
struct SrqLimits {
  std::uint32_t max_recv_dtos = 0;
  std::uint32_t max_recv_iov = 0;
};

class Ia : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kIa;

  // Opens the IA named `ia_name` whose dat.conf params are `params_text`, on the transport
  // `factory` makes for them (the provider passes transport::CreateTransport; tests pass fakes).
  // `async_evd` follows dat_ia_open: DAT_HANDLE_NULL asks us to create the async EVD with at
  // least `async_evd_qlen` entries; an existing async EVD handle is adopted. Output parameters
  // are set only on success.
  static Status Open(DAT_PROVIDER* provider, const char* ia_name, const std::string& params_text,
                     transport::TransportFactory factory, DAT_COUNT async_evd_qlen,
                     DAT_EVD_HANDLE& async_evd, Ia** out);

  // dat_ia_close. Graceful close refuses (kInvalidState, kIaInUse) while consumer objects other
  // than the async EVD we created exist; abrupt close destroys them. Frees `ia` on success.
  static Status Close(Ia* ia, DAT_CLOSE_FLAGS flags);

  // dat_ia_query: fills the fields the masks ask for.
  Status Query(DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR* ia_attr,
               DAT_PROVIDER_ATTR_MASK provider_mask, DAT_PROVIDER_ATTR* provider_attr) const;

  const std::string& name() const { return name_; }
  const IaParams& params() const { return params_; }
  const sockaddr_in& address() const { return address_; }
  Evd* async_evd() const { return async_evd_; }
  // Where an SRQ EP reports the end of its connection (its connection event, then EP_BROKEN), so
  // that no other EP's pair comes between the two (core/end_reports.h).
  EndReports& end_reports() { return end_reports_; }
  MemoryTable& memory() { return memory_; }
  const MemoryTable& memory() const { return memory_; }
  transport::Transport& transport() { return *transport_; }
  const transport::Capabilities& capabilities() const { return transport_->capabilities(); }
  SrqLimits srq_limits() const;
  const ProviderSpecificAttributes& provider_specific() const { return provider_specific_; }
  // The DAT IB counters of the IA (dat_ib_query_counters on the IA handle): objects created and
  // freed (counted by Track and Untrack), connection management, and error diagnostics.
  IaCounters& counters() { return counters_; }
  Status QueryCounters(int which, DAT_UINT64* out, bool reset);
  Status PrintCounters(int which, bool reset);

  // What EVD waits and dequeues of this IA drive: the transport's progress on the consumer's
  // thread (until the timeout in busy-poll mode, for the IA's spin_us otherwise).
  evd::ProgressHook* progress_hook() { return &poller_; }

  // One async EVD entry per SRQ EP, reserved by Ep::Create and returned by Ep::Destroy: each
  // such EP raises DAT_ASYNC_ERROR_EP_BROKEN when its connection ends, so a peer that drops many
  // at once would otherwise overflow an async EVD sized for the consumer's own events (stock
  // dtestsrq opens with 8 entries and runs 100 SRQ connections). The EVD grows, never shrinks.
  // kInsufficientResources/kMemory if it cannot grow; beyond the longest EVD, no more is kept.
  Status ReserveAsyncEntry();
  void ReleaseAsyncEntry();

  // The handle the consumer holds for this IA: libdat2 hands out its own index in place of our
  // pointer. dat/ finds it once and caches it here for queries that report an ia_handle.
  std::atomic<DAT_IA_HANDLE>& consumer_handle() { return consumer_handle_; }

  // The consumer objects of this IA (all but the async EVD it created), so that graceful close
  // can refuse while any exists and abrupt close can destroy them.
  void Track(HandleHeader* object);
  void Untrack(HandleHeader* object);
  std::size_t tracked() const;
  // Calls `visit` on each tracked object, under the tracking lock (so `visit` must not create or
  // free objects of this IA).
  template <class Visit>
  void ForEachTracked(Visit visit) const {
    std::lock_guard lock(objects_mutex_);
    for (HandleHeader* object : objects_) visit(object);
  }

  // The first UD EP of the IA was made: from now on every PSP also listens for UD endpoints'
  // requests (Psp::ListenDatagrams), those that exist now and those made later. Until then a PSP
  // holds no datagram listener (a socket on tcp): an IA without UD EPs pays nothing for them.
  void WantDatagrams();
  bool datagrams_wanted() const { return datagrams_wanted_.load(std::memory_order_seq_cst); }

  // How many LMRs and bound RMRs one IA may have (the key table is sized for it at open).
  static constexpr std::uint32_t kMaxMemoryKeys = transport::kMaxMemoryKeys;

  // Public for NewHandle; use Open.
  Ia(std::string name, IaParams params, std::unique_ptr<transport::Transport> transport);
  ~Ia();

 private:
  // No vtable in a handle object: the progress hook EVD waits call is this member.
  class Poller final : public evd::ProgressHook {
   public:
    explicit Poller(Ia& ia) : ia_(ia) {}
    // A waiter's poll is a safe point: a CNO agent the delivered events triggered runs here.
    bool Progress() noexcept override {
      const bool moved = ia_.transport_->Progress();
      return RunDeferredCalls() || moved;
    }
    bool ProgressDue() const noexcept override { return ia_.transport_->ProgressDue(); }
    std::uint32_t spin_us() const noexcept override {
      // Busy-poll: spin until the timeout. Otherwise the IA's spin, at least 1 us (0 would mean
      // "forever" to the queue; spin_us=0 asks for no spin at all, which 1 us nearly is).
      return ia_.capabilities().busy_poll ? 0 : std::max<std::uint32_t>(1, ia_.params_.options.spin_us);
    }
    void Pause() noexcept override { ia_.transport_->Pause(); }
    void Resume() noexcept override { ia_.transport_->Resume(); }

   private:
    Ia& ia_;
  };

  // The key table's observer: every key core publishes or revokes, told to the transport
  // (Transport::PublishKey, RevokeKey).
  class KeyHooks final : public KeyObserver {
   public:
    explicit KeyHooks(Ia& ia) : ia_(ia) {}
    void Published(const WindowView& view) override;
    void Revoked(std::uint32_t key) override { ia_.transport_->RevokeKey(key); }

   private:
    Ia& ia_;
  };

  std::string name_;
  IaParams params_;
  std::unique_ptr<transport::Transport> transport_;
  sockaddr_in address_;
  ProviderSpecificAttributes provider_specific_;
  Evd* async_evd_ = nullptr;
  bool owns_async_evd_ = false;
  softdat::Mutex async_reserve_mutex_;
  EndReports end_reports_;
  DAT_COUNT async_base_qlen_ = 0;   // the async EVD's length before any reservation
  DAT_COUNT async_reserved_ = 0;    // entries kept for SRQ EPs
  MemoryTable memory_;
  IaCounters counters_;
  Poller poller_{*this};
  KeyHooks key_hooks_{*this};
  std::atomic<DAT_IA_HANDLE> consumer_handle_{nullptr};
  mutable softdat::Mutex objects_mutex_;
  std::atomic<bool> datagrams_wanted_{false};
  std::unordered_set<HandleHeader*> objects_;
};

}  // namespace softdat::core
