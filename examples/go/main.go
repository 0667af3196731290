// An operator's view of libkubetune: one KPA fleet tick and its state persisted across a restart, one HPA
// reconcile with its status conditions, a batch of HPAs in one call, a KPA scaler timing out an activation and
// one restored from a PodAutoscaler's status, an activator's throttler share, and a rejected configuration
// showing the library's error message.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	// Three revisions with containerConcurrency 10 (target 7 per pod), decided in one batch call.
	fleet, err := NewKpaFleet("{}", `{"container_concurrency": 10}`, 3, 0)
	if err != nil {
		return err
	}
	defer fleet.Close()
	kpa, err := fleet.Decide(0, []int32{1, 4, 10}, []float64{7, 28, 0}, []float64{70, 28, 0})
	if err != nil {
		return err
	}
	for i, d := range kpa {
		fmt.Printf("kpa revision=%d desired=%d ebc=%d activators=%d panicking=%t\n", i, d.Desired,
			d.ExcessBurstCapacity, d.Activators, d.Panicking)
	}

	// An operator restart: the fleet's state is persisted, a new fleet created from the same config and
	// restored; revision 0 is still panicking and keeps its 10 pods on a calm tick.
	state, err := fleet.State()
	if err != nil {
		return err
	}
	restarted, err := NewKpaFleet("{}", `{"container_concurrency": 10}`, 3, 0)
	if err != nil {
		return err
	}
	defer restarted.Close()
	if err := restarted.Restore(state); err != nil {
		return err
	}
	calm, err := restarted.Decide(2*time.Second, []int32{1, 4, 10}, []float64{0, 0, 0}, []float64{0, 0, 0})
	if err != nil {
		return err
	}
	fmt.Printf("kpa restored revision=0 desired=%d panicking=%t\n", calm[0].Desired, calm[0].Panicking)
	if err := restarted.Restore("[]"); err != nil {
		fmt.Printf("restore rejected: %v\n", err)
	}

	// An HPA without behaviour: a metric asking for 60 replicas from 3 is capped at max(2 x 3, 4).
	hpa, err := NewHpa(`{"minReplicas": 1, "maxReplicas": 100}`)
	if err != nil {
		return err
	}
	defer hpa.Close()
	d, err := hpa.Reconcile(15*time.Second, 3, []int32{60}, []bool{true})
	if err != nil {
		return err
	}
	fmt.Printf("hpa desired=%d rescale=%t reason=%q\n", d.DesiredReplicas, d.Rescale, d.Reason)
	for _, c := range d.Conditions {
		fmt.Printf("hpa condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}

	// The batch form: three HPAs of one spec in one call; the second one's metric failed (-1).
	hpas, err := NewHpaFleet(`{"minReplicas": 2, "maxReplicas": 10}`, 3)
	if err != nil {
		return err
	}
	defer hpas.Close()
	desired, err := hpas.Reconcile(15*time.Second, []int32{4, 4, 4}, []int32{9, -1, 30})
	if err != nil {
		return err
	}
	fmt.Printf("hpa fleet desired=%v\n", desired)
	// The fleet's state survives a restart: a new fleet restored from it decides as the old one would.
	hpaState, err := hpas.State()
	if err != nil {
		return err
	}
	hpasRestarted, err := NewHpaFleet(`{"minReplicas": 2, "maxReplicas": 10}`, 3)
	if err != nil {
		return err
	}
	defer hpasRestarted.Close()
	if err := hpasRestarted.Restore(hpaState); err != nil {
		return err
	}
	again, err := hpas.Reconcile(30*time.Second, desired, []int32{3, 3, 3})
	if err != nil {
		return err
	}
	after, err := hpasRestarted.Reconcile(30*time.Second, desired, []int32{3, 3, 3})
	if err != nil {
		return err
	}
	fmt.Printf("hpa fleet after restart desired=%v (same as without: %v)\n", after, again)

	// A revision whose pods never become ready: with a 5 s progress deadline the activation times out after
	// 5 s + 30 s, the scaler scales it to zero and marks the PodAutoscaler inactive (TimedOut).
	scaler, err := NewKpaScaler("{}", `{"progress_deadline_s": 5}`, 0, 1)
	if err != nil {
		return err
	}
	defer scaler.Close()
	for _, t := range []time.Duration{0, 20 * time.Second, 36 * time.Second} {
		want := int32(0)
		if t == 0 {
			want = 1
		}
		st, err := scaler.Reconcile(t, want, 0, 0, -1)
		if err != nil {
			return err
		}
		requeue := "none"
		if st.RequeueAfter >= 0 {
			requeue = st.RequeueAfter.String()
		}
		fmt.Printf("kpa scaler t=%v want=%d replicas=%d state=%s reason=%s requeue=%s\n", t, st.Want, st.Replicas,
			st.State, st.Reason, requeue)
	}

	// A PodAutoscaler read back as Inactive although min-scale is 11, with 10 pods (knative kpa_test.go
	// "want=1, underscaled, PA inactive"): a desired scale of 1 raises it to 11 and marks it Activating.
	minScale, err := NewKpaScaler("{}", `{"min_scale": 11}`, 0, 10)
	if err != nil {
		return err
	}
	defer minScale.Close()
	if err := minScale.Restore(`{"pa_state": "inactive", "reason": "NoTraffic", "since_s": 0,
		"scale_target_initialized": true, "proxy_mode": true, "proxy_since_s": 0, "replicas": 10}`); err != nil {
		return err
	}
	st, err := minScale.Reconcile(10*time.Second, 1, 0, 10, -1)
	if err != nil {
		return err
	}
	fmt.Printf("kpa min-scale inactive -> replicas=%d state=%s\n", st.Replicas, st.State)

	// Activator 0 of 2 for a revision of 5 pods with containerConcurrency 1: two trackers plus the remnant.
	share, err := ActivatorShare(5, 1, 2, 0)
	if err != nil {
		return err
	}
	fmt.Printf("activator capacity=%d trackers=%v\n", share.Capacity, share.Trackers)

	// A deliberate mistake: a stable window below upstream's 6 s minimum is rejected with the key named.
	if _, err := NewKpaFleet(`{"stable_window_s": 2}`, "{}", 1, 0); err != nil {
		fmt.Printf("rejected: %v\n", err)
	} else {
		return fmt.Errorf("a 2 s stable window was accepted")
	}
	return nil
}
