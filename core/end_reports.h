// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The ends of an IA's SRQ connections, reported one after another: each report posts an EP's
// connection event and then its DAT_ASYNC_ERROR_EP_BROKEN, and no other EP's pair comes between
// them. Stock dtestsrq pairs each DISCONNECTED with the next EP_BROKEN, and connection ends are
// delivered by whichever thread drives progress, several at once. One reporter at a time posts
// (DeliveryTurn), with no lock held: an EVD post may wake waiters and trigger CNOs.
#pragma once

#include "base/mutex.h"
#include "core/delivery_turn.h"

namespace softdat::core {

// What one EP reports; a member of the EP (handle objects have no vtable).
class EndReport {
 public:
  // Posts the connection event, then EP_BROKEN.
  virtual void Post() = 0;

 protected:
  ~EndReport() = default;

 private:
  friend class EndReports;
  EndReport* next_ = nullptr;  // under EndReports::mutex_
  bool pending_ = false;       // queued or being posted (under EndReports::mutex_)
};

class EndReports {
 public:
  // Queues `report` and posts every queued one in order, unless another thread is posting them:
  // then that thread posts this one too, before it stops.
  void Report(EndReport& report);
  // Returns once `report` is neither queued nor being posted (the EP is about to go).
  void Await(EndReport& report);

 private:
  EndReport* Pop();
  void Posted(EndReport& report);

  softdat::Mutex mutex_;
  EndReport* head_ = nullptr;
  EndReport* tail_ = nullptr;
  DeliveryTurn turn_;
};

}  // namespace softdat::core
