// SPDX-License-Identifier: Apache-2.0
// WithoutGil: releases the GIL for a blocking call when this thread holds it (torch's bindings
// may not have released it), and takes it back at the end of the scope.
// Invariant: a no-op on a thread without the GIL, or before Python is initialized.
#pragma once

#include <Python.h>

namespace smddp::torch_shim {

class WithoutGil {
 public:
  WithoutGil() {
    if (Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
  }
  ~WithoutGil() {
    if (saved_ != nullptr) PyEval_RestoreThread(saved_);
  }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  PyThreadState* saved_ = nullptr;
};

}  // namespace smddp::torch_shim
