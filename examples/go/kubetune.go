// Thin cgo wrapper over libkubetune's C API (include/kubetune/c_api.h): type conversion only, every decision is
// made by the library. Build with CGO_CFLAGS=-I<repo>/include and CGO_LDFLAGS=-L<repo>/build, run with
// LD_LIBRARY_PATH=<repo>/build.
package main

/*
#cgo LDFLAGS: -lkubetune
#include <stdlib.h>
#include "kubetune/c_api.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"time"
	"unsafe"
)

// Error is a failed kt_* call: the return code and the message the library wrote to err_out.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("kubetune: code %d: %s", e.Code, e.Msg) }

// call runs one kt_* function with its own err_out, so the message cannot be lost when the goroutine moves to
// another OS thread (kt_last_error is per thread).
func call(f func(errOut **C.char) C.int) error {
	var msg *C.char
	rc := f(&msg)
	if rc == C.KT_OK {
		return nil
	}
	defer C.kt_free_string(msg)
	return &Error{Code: int(rc), Msg: C.GoString(msg)}
}

// cstr converts s for one call; the caller frees it.
func cstr(s string) *C.char { return C.CString(s) }

// stateJSON reads a handle's state through a kt_*_state_json function.
func stateJSON(f func(out, errOut **C.char) C.int) (string, error) {
	var out *C.char
	if err := call(func(e **C.char) C.int { return f(&out, e) }); err != nil {
		return "", err
	}
	defer C.kt_free_string(out)
	return C.GoString(out), nil
}

// restoreJSON sets a handle's state through a kt_*_restore function.
func restoreJSON(state string, f func(state *C.char, errOut **C.char) C.int) error {
	s := cstr(state)
	defer C.free(unsafe.Pointer(s))
	return call(func(e **C.char) C.int { return f(s, e) })
}

// KpaFleet is a batch of Knative KPA deciders sharing one config and revision spec.
type KpaFleet struct {
	h *C.kt_kpa_fleet
	n int
}

// KpaDecision is one revision's result of a fleet tick.
type KpaDecision struct {
	Desired             int32
	ExcessBurstCapacity int32
	Activators          int32
	Panicking           bool
}

// NewKpaFleet creates n deciders from config-autoscaler and revision JSON (snake_case keys, "{}" = defaults).
func NewKpaFleet(configJSON, revisionJSON string, n int, now time.Duration) (*KpaFleet, error) {
	cfg, rev := cstr(configJSON), cstr(revisionJSON)
	defer C.free(unsafe.Pointer(cfg))
	defer C.free(unsafe.Pointer(rev))
	f := &KpaFleet{n: n}
	err := call(func(e **C.char) C.int {
		return C.kt_kpa_fleet_create(cfg, rev, C.size_t(n), nil, C.double(now.Seconds()), &f.h, e)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Close frees the fleet.
func (f *KpaFleet) Close() { C.kt_kpa_fleet_free(f.h) }

// State returns every decider's state (panic mode, scale-down delay window) as JSON, to persist across restarts.
func (f *KpaFleet) State() (string, error) {
	return stateJSON(func(out, e **C.char) C.int { return C.kt_kpa_fleet_state_json(f.h, out, e) })
}

// Restore sets a State() into a fleet created with the same size, config and revision.
func (f *KpaFleet) Restore(state string) error {
	return restoreJSON(state, func(s *C.char, e **C.char) C.int { return C.kt_kpa_fleet_restore(f.h, s, e) })
}

// Decide runs one tick at `now` for every revision (inputs one entry per revision).
func (f *KpaFleet) Decide(now time.Duration, ready []int32, stable, panic []float64) ([]KpaDecision, error) {
	if len(ready) != f.n || len(stable) != f.n || len(panic) != f.n {
		return nil, fmt.Errorf("kubetune: Decide needs %d entries per input", f.n)
	}
	desired, ebc, act := make([]int32, f.n), make([]int32, f.n), make([]int32, f.n)
	pan := make([]uint8, f.n)
	err := call(func(e **C.char) C.int {
		return C.kt_kpa_fleet_decide(f.h, C.double(now.Seconds()), C.size_t(f.n), i32p(ready), f64p(stable),
			f64p(panic), i32p(desired), i32p(ebc), i32p(act), (*C.uint8_t)(unsafe.Pointer(&pan[0])), 1, e)
	})
	if err != nil {
		return nil, err
	}
	out := make([]KpaDecision, f.n)
	for i := range out {
		out[i] = KpaDecision{desired[i], ebc[i], act[i], pan[i] != 0}
	}
	return out, nil
}

// Hpa is one HorizontalPodAutoscaler's controller state (recommendations, scale events).
type Hpa struct{ h *C.kt_hpa }

// HpaCondition is one autoscaling/v2 status condition with upstream's reason and message.
type HpaCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// HpaDecision is the result of one reconcile.
type HpaDecision struct {
	DesiredReplicas       int32          `json:"desired_replicas"`
	Rescale               bool           `json:"rescale"`
	MetricDesiredReplicas int32          `json:"metric_desired_replicas"`
	Reason                string         `json:"reason"`
	Conditions            []HpaCondition `json:"conditions"`
}

// NewHpa creates the controller for an autoscaling/v2 spec ({"minReplicas", "maxReplicas", "behavior"}).
func NewHpa(specJSON string) (*Hpa, error) {
	spec := cstr(specJSON)
	defer C.free(unsafe.Pointer(spec))
	h := &Hpa{}
	if err := call(func(e **C.char) C.int { return C.kt_hpa_create(spec, nil, &h.h, e) }); err != nil {
		return nil, err
	}
	return h, nil
}

// Close frees the controller.
func (h *Hpa) Close() { C.kt_hpa_free(h.h) }

// Reconcile decides at `now` from one replica proposal per metric (valid[i] false: metric i failed).
func (h *Hpa) Reconcile(now time.Duration, current int32, proposals []int32, valid []bool) (*HpaDecision, error) {
	if len(proposals) == 0 || len(valid) != len(proposals) {
		return nil, fmt.Errorf("kubetune: Reconcile needs one valid flag per proposal")
	}
	ok := make([]uint8, len(valid))
	for i, v := range valid {
		if v {
			ok[i] = 1
		}
	}
	var js *C.char
	err := call(func(e **C.char) C.int {
		return C.kt_hpa_reconcile_json(h.h, C.double(now.Seconds()), C.int32_t(current), C.size_t(len(proposals)),
			i32p(proposals), (*C.uint8_t)(unsafe.Pointer(&ok[0])), &js, e)
	})
	if err != nil {
		return nil, err
	}
	defer C.kt_free_string(js)
	var d HpaDecision
	if err := json.Unmarshal([]byte(C.GoString(js)), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// HpaFleet is a batch of HPAs sharing one spec, reconciled in one call (one metric each).
type HpaFleet struct {
	h *C.kt_hpa_fleet
	n int
}

// NewHpaFleet creates n HPA controllers for one autoscaling/v2 spec.
func NewHpaFleet(specJSON string, n int) (*HpaFleet, error) {
	spec := cstr(specJSON)
	defer C.free(unsafe.Pointer(spec))
	f := &HpaFleet{n: n}
	if err := call(func(e **C.char) C.int { return C.kt_hpa_fleet_create(spec, nil, C.size_t(n), &f.h, e) }); err != nil {
		return nil, err
	}
	return f, nil
}

// Close frees the fleet.
func (f *HpaFleet) Close() { C.kt_hpa_fleet_free(f.h) }

// State returns every HPA's recommendation history and scale events as JSON, to persist across restarts.
func (f *HpaFleet) State() (string, error) {
	return stateJSON(func(out, e **C.char) C.int { return C.kt_hpa_fleet_state_json(f.h, out, e) })
}

// Restore sets a State() into a fleet created with the same size and spec.
func (f *HpaFleet) Restore(state string) error {
	return restoreJSON(state, func(s *C.char, e **C.char) C.int { return C.kt_hpa_fleet_restore(f.h, s, e) })
}

// Reconcile decides every HPA at `now`; proposals[i] < 0 marks HPA i's metric as failed. Returns the replica
// counts to set.
func (f *HpaFleet) Reconcile(now time.Duration, current, proposals []int32) ([]int32, error) {
	if len(current) != f.n || len(proposals) != f.n {
		return nil, fmt.Errorf("kubetune: Reconcile needs %d entries per input", f.n)
	}
	desired := make([]int32, f.n)
	err := call(func(e **C.char) C.int {
		return C.kt_hpa_fleet_reconcile(f.h, C.double(now.Seconds()), C.size_t(f.n), i32p(current), i32p(proposals),
			i32p(desired), nil, 1, e)
	})
	return desired, err
}

// KpaScaler is one revision's KPA scaler: scale bounds, scale-to-zero gating and the PA's Active condition.
type KpaScaler struct{ h *C.kt_kpa_scaler }

// ScalerStep is one reconcile's outcome with upstream's actions: re-enqueue after RequeueAfter (< 0: not asked)
// and start the activator probe when ProbeActivator is set.
type ScalerStep struct {
	Want           int32
	Applied        bool
	Replicas       int32
	ProxyMode      bool
	State          string // "Activating", "Active" or "Inactive"
	Reason         string
	RequeueAfter   time.Duration
	ProbeActivator bool
}

var paStates = map[C.kt_pa_state]string{C.KT_PA_ACTIVATING: "Activating", C.KT_PA_ACTIVE: "Active",
	C.KT_PA_INACTIVE: "Inactive"}

// NewKpaScaler creates the scaler of one revision (config and revision JSON as NewKpaFleet; initialReplicas < 0:
// the revision's initial scale).
func NewKpaScaler(configJSON, revisionJSON string, now time.Duration, initialReplicas int32) (*KpaScaler, error) {
	cfg, rev := cstr(configJSON), cstr(revisionJSON)
	defer C.free(unsafe.Pointer(cfg))
	defer C.free(unsafe.Pointer(rev))
	s := &KpaScaler{}
	err := call(func(e **C.char) C.int {
		return C.kt_kpa_scaler_create(cfg, rev, C.double(now.Seconds()), C.int32_t(initialReplicas), &s.h, e)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close frees the scaler.
func (s *KpaScaler) Close() { C.kt_kpa_scaler_free(s.h) }

// State returns the scaler's state (the PodAutoscaler's Active condition and its time, ScaleTargetInitialized, SKS
// mode, replicas) as JSON.
func (s *KpaScaler) State() (string, error) {
	return stateJSON(func(out, e **C.char) C.int { return C.kt_kpa_scaler_state_json(s.h, out, e) })
}

// Restore sets a state, from State() or built from the live PodAutoscaler's status.
func (s *KpaScaler) Restore(state string) error {
	return restoreJSON(state, func(st *C.char, e **C.char) C.int { return C.kt_kpa_scaler_restore(s.h, st, e) })
}

// Reconcile applies the decider's desired count (< 0: no data) at `now`; probe is -1 (not probed), 0 (failed)
// or 1 (succeeded).
func (s *KpaScaler) Reconcile(now time.Duration, desired, excessBurstCapacity, readyPods int32, probe int) (ScalerStep, error) {
	var st C.kt_kpa_scaler_step
	err := call(func(e **C.char) C.int {
		return C.kt_kpa_scaler_reconcile(s.h, C.double(now.Seconds()), C.int32_t(desired),
			C.int32_t(excessBurstCapacity), C.int32_t(readyPods), C.int(probe), &st, e)
	})
	if err != nil {
		return ScalerStep{}, err
	}
	requeue := time.Duration(-1)
	if st.requeue_after_s >= 0 {
		requeue = time.Duration(float64(st.requeue_after_s) * float64(time.Second))
	}
	return ScalerStep{int32(st.want), st.applied != 0, int32(st.replicas), st.proxy_mode != 0, paStates[st.state],
		C.GoString(st.reason), requeue, st.probe_activator != 0}, nil
}

// ThrottlerShare is one activator's breaker capacity and the pod trackers it owns.
type ThrottlerShare struct {
	Capacity int64
	Trackers []int64 // indices into the address-sorted pod trackers
}

// ActivatorShare computes the share of activator `index` out of `activators` for a revision with `backends` ready
// pods (one tracker each) and containerConcurrency `cc`.
func ActivatorShare(backends, cc int64, activators, index int32) (ThrottlerShare, error) {
	in := C.kt_throttler_input{backends: C.int64_t(backends), pod_trackers: -1, container_concurrency: C.int64_t(cc),
		activator_count: C.int32_t(activators), activator_index: C.int32_t(index)}
	var r C.kt_throttler_result
	if err := call(func(e **C.char) C.int { return C.kt_throttler_share(&in, &r, e) }); err != nil {
		return ThrottlerShare{}, err
	}
	var trackers []int64
	for i := r.slice_begin; i < r.slice_end; i++ {
		trackers = append(trackers, int64(i))
	}
	if r.remnant >= 0 {
		trackers = append(trackers, int64(r.remnant))
	}
	return ThrottlerShare{int64(r.capacity), trackers}, nil
}

func i32p(s []int32) *C.int32_t  { return (*C.int32_t)(unsafe.Pointer(&s[0])) }
func f64p(s []float64) *C.double { return (*C.double)(unsafe.Pointer(&s[0])) }
