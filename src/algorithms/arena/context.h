// SPDX-License-Identifier: Apache-2.0
// arena::Context: what the arena algorithms reach beyond messages: this rank's arena and its
// shareable tensor memory. The communicator attaches one to the ExecSettings of each arena it has
// (its own, and its host's in a communicator over several hosts); Exec carries it as an
// ExecAttachment and knows nothing of it. An algorithm asks for it through context(exec), which
// fails clearly when the communicator has no arena.
#pragma once

#include "algorithms/exec.h"

namespace smddp::algo::arena {

class Arena;  // arena.h
class Pool;   // pool.h

struct Context : ExecAttachment {
  Context(Arena* arena, Pool* pool) : ExecAttachment{&kFamily}, arena(arena), pool(pool) {}

  Arena* arena;  // never null
  Pool* pool;    // null when the ranks cannot map each other's tensors

  static const char kFamily;  // the tag of this kind of attachment
};

// exec's arena context, or null when its communicator has none (a check, inline: cheap).
inline const Context* contextOf(const Exec& exec) {
  const ExecAttachment* a = exec.attachment();
  return a != nullptr && a->family == &Context::kFamily ? static_cast<const Context*>(a) : nullptr;
}

// exec's shareable tensor memory, or null (no arena, or ranks that cannot map each other's).
inline Pool* poolOf(const Exec& exec) {
  const Context* c = contextOf(exec);
  return c == nullptr ? nullptr : c->pool;
}

// Error(kInvalidArgument) naming exec's collective: its communicator has no arena.
[[noreturn]] void throwNoArena(const Exec& exec);

// exec's arena context, or throwNoArena.
inline const Context& context(const Exec& exec) {
  const Context* c = contextOf(exec);
  if (c == nullptr) throwNoArena(exec);
  return *c;
}

}  // namespace smddp::algo::arena
