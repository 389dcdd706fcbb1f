package stage

import (
	"slices"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
)

// T3, A13: [remove] keeps its steps in the place apart from those run
// outside it, each in its order, with the section's shell and its caches;
// the user's own file declares none of them.
func TestRemoveStepsInsideAndOutside_T3(t *testing.T) {
	file := []byte(`[remove]
	step = make clean
	outside = docker compose -p x down
	step = rm -rf build
	cache = ~/.cache/go-build
	shell = true
`)
	entries, ok := gitconfig.Parse(file)
	if !ok {
		t.Fatal("the config did not parse")
	}
	cfg := newConfig()
	if err := cfg.apply(entries, true); err != nil {
		t.Fatal(err)
	}
	inside := []Step{{Command: "make clean", Shell: true}, {Command: "rm -rf build", Shell: true}}
	if !slices.Equal(cfg.Remove, inside) {
		t.Errorf("remove steps: got %+v, want %+v", cfg.Remove, inside)
	}
	if want := []Step{{Command: "docker compose -p x down", Shell: true}}; !slices.Equal(cfg.RemoveOutside, want) {
		t.Errorf("outside steps: got %+v, want %+v", cfg.RemoveOutside, want)
	}
	if want := []string{"~/.cache/go-build"}; !slices.Equal(cfg.RemoveCaches, want) {
		t.Errorf("caches: got %q, want %q", cfg.RemoveCaches, want)
	}

	user := newConfig()
	if err := user.apply(entries, false); err != nil {
		t.Fatal(err)
	}
	if len(user.Remove)+len(user.RemoveOutside)+len(user.RemoveCaches) > 0 {
		t.Errorf("the user's file declared remove steps: %+v %+v %q", user.Remove, user.RemoveOutside, user.RemoveCaches)
	}

	bad, _ := gitconfig.Parse([]byte("[remove]\n\tcache = relative/dir\n"))
	if err := newConfig().apply(bad, true); err == nil {
		t.Error("a relative [remove] cache was taken")
	}
}

// TestRunnerLinesGetAStepsEnvironmentAndWhatTheyName_M1_X4: a runner's lines
// run with a repository step's environment (X4) and the variables its
// declaration names, never the caller's whole environment (issue 61): a
// secret there stays there. An ssh runner keeps ssh's agent.
func TestRunnerLinesGetAStepsEnvironmentAndWhatTheyName_M1_X4(t *testing.T) {
	entries, _ := gitconfig.Parse([]byte("[runner \"k8s\"]\n\tkind = command\n\tstart = kubectl run x\n\tenv = KUBECONFIG, AWS_*\n[runner \"big\"]\n\tkind = ssh\n\thost = b\n\tpath = ~/x\n"))
	cfg := newConfig()
	if err := cfg.apply(entries, true); err != nil {
		t.Fatal(err)
	}
	caller := []string{"PATH=/bin", "HOME=/h", "SECRET_TOKEN=hunter2", "KUBECONFIG=/h/kube", "AWS_PROFILE=p", "SSH_AUTH_SOCK=/s", "FLUME_PLACE=x"}
	if got, want := cfg.Runners["k8s"].Environ(caller), []string{"PATH=/bin", "HOME=/h", "KUBECONFIG=/h/kube", "AWS_PROFILE=p"}; !slices.Equal(got, want) {
		t.Errorf("command runner: %q, want %q", got, want)
	}
	if got, want := cfg.Runners["big"].Environ(caller), []string{"PATH=/bin", "HOME=/h", "SSH_AUTH_SOCK=/s"}; !slices.Equal(got, want) {
		t.Errorf("ssh runner: %q, want %q", got, want)
	}
	bad, _ := gitconfig.Parse([]byte("[runner \"x\"]\n\tenv = $(id)\n"))
	if err := newConfig().apply(bad, true); err == nil {
		t.Error("a runner env that names no variable was taken")
	}
}

// TestStageBudgetIsClampedAndSaid_W1: a budget below 5 minutes or above
// 120 is clamped, and the note says what the stage gets instead; a
// stage's own budget stands over flume.budget; none declared is 45
// minutes, said nothing of.
func TestStageBudgetIsClampedAndSaid_W1(t *testing.T) {
	for _, c := range []struct {
		file, stage string
		want        time.Duration
		note        string
	}{
		{"[flume]\n\tbudget = 1m\n", "code", 5 * time.Minute, "flume.budget 1m0s is outside 5m0s–2h0m0s: stage code gets 5m0s (W1)"},
		{"[flume]\n\tbudget = 500m\n", "code", 120 * time.Minute, "flume.budget 8h20m0s is outside 5m0s–2h0m0s: stage code gets 2h0m0s (W1)"},
		{"[flume]\n\tbudget = 30m\n", "code", 30 * time.Minute, ""},
		{"[flume]\n\tbudget = 500m\n[stage \"code\"]\n\tbudget = 1m\n", "code", 5 * time.Minute, "stage code: budget 1m0s is outside 5m0s–2h0m0s: stage code gets 5m0s (W1)"},
		{"", "code", 45 * time.Minute, ""},
	} {
		entries, ok := gitconfig.Parse([]byte(c.file))
		if !ok {
			t.Fatalf("%q did not parse", c.file)
		}
		cfg := newConfig()
		if err := cfg.apply(entries, true); err != nil {
			t.Fatal(err)
		}
		if got := cfg.StageBudget(c.stage); got != c.want {
			t.Errorf("%q: budget %s, want %s", c.file, got, c.want)
		}
		if got := cfg.BudgetNote(c.stage); got != c.note {
			t.Errorf("%q: note %q, want %q", c.file, got, c.note)
		}
	}
}
