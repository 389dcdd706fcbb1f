package stage

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/gitconfig"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
)

// ConfigPath is the committed file where a repository declares readying
// steps, remove steps, kinds and stages (git-config syntax, L2, K5).
const ConfigPath = ".flume/config"

// Step is one repository command: readying (L2) or removal (T3).
type Step struct {
	Command string
	// Shell runs the command through /bin/sh -c; otherwise it is split
	// into words (with '…' and "…" quoting) and run directly.
	Shell bool
}

// Argv is the program and arguments the step runs.
func (s Step) Argv() ([]string, error) {
	if s.Shell {
		return []string{"/bin/sh", "-c", s.Command}, nil
	}
	return splitWords(s.Command)
}

// Config is what .flume/config (at a commit) and the user-level file
// declare. The repository's file wins on conflicts.
type Config struct {
	Ready []Step
	// Remove run in a place before its worktree is removed, behind an
	// agent's boundary: its tree is its agent's (T3, A13).
	Remove []Step
	// RemoveOutside run as the person, before Remove, in an empty folder
	// of flume's, never the place ([remove] outside): a step that must
	// reach the person's services (a compose project stopped through
	// docker's socket) and that reads nothing the agent wrote.
	RemoveOutside []Step
	// Land are the checks a candidate passes before the lander moves the
	// target to it ([land] check, repository file only: Q2).
	Land []Step
	// LandBatch is how many entries the lander tests together, at most
	// ([land] batch; DefaultLandBatch when unset, 1 for one at a time).
	LandBatch int
	// LandApprove: an entry lands only once a person approved it, as
	// proven green on the target's tip ([land] approve).
	LandApprove bool
	// LandRemote is the remote the target lives on, shared by hosts:
	// the lander lands there by a leased push ([land] remote; Q8).
	LandRemote string
	// LandAuto: each submit starts the lander in the background ([land]
	// auto; Q9).
	LandAuto bool
	// LandSquash: a candidate is the entry's change squashed onto the tip
	// (one parent) rather than merged ([land] merge = squash; Q2).
	LandSquash bool
	// LandCaches are folders a check may write besides its worktree and
	// its own temp folder ([land] cache, absolute or under ~/; Q13): a
	// build's or a package manager's cache.
	LandCaches []string
	// LandTimeout is how long one check may run ([land] timeout;
	// DefaultLandTimeout when unset): past it, the check is ended with
	// its process group and its entry returned.
	LandTimeout time.Duration
	// ReadyCaches are the folders a readying step behind the boundary (a
	// place started from an agent's commit, A13) may write besides its
	// place: [ready] cache, as [land] cache.
	ReadyCaches []string
	// RemoveCaches are the folders a remove step may write besides its
	// place: [remove] cache, as [land] cache.
	RemoveCaches []string
	// Runners are the runners places may be launched on (launch --on),
	// by name: the user's declaration of a name wins over the
	// repository's.
	Runners map[string]RunnerDecl
	// Kinds are the declared kinds, by name, each a list of stage names.
	Kinds map[string][]string
	// Stages are the declared stages, by name.
	Stages map[string]StageDecl
	// Agents are the declared agent programs, by name (A1).
	Agents map[string]agent.Program
	// Submit is the repository's submission command, named in prompts.
	Submit string
	// Budget is flume.budget: each stage's time budget unless its
	// declaration names one (W1).
	Budget time.Duration
	// Notify is the notifier: the user-level file's, else the
	// repository's; run with each event as JSON on standard input.
	Notify         Step
	notifyFromUser bool
	// NotifyExport are the moments a top-level place's export page is
	// written and named in its notification: finished, blocked,
	// delegated ([notify] export; the user's file wins).
	NotifyExport   []string
	exportFromUser bool
	// StuckAfter is flume.stuckAfter: how long a stage may be quiet
	// before it is reported stuck (A7); 0 is the default, 30m.
	StuckAfter time.Duration
	// NoSandbox is flume.sandbox = off: agents run without the sandbox
	// that holds what they write (A12); a role with path rules is then
	// refused.
	NoSandbox bool
	// Prices are [price "MODEL"] sections: what a model's tokens cost,
	// for transcripts that record tokens but no cost (W6).
	Prices map[string]Price
	// Run is the [run] section: what makes a place runnable.
	Run RunDecl
}

// Price is a model's price in US dollars per million tokens of each kind.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Cost is what tokens cost at p.
func (p Price) Cost(t agent.Tokens) float64 {
	return (float64(t.Input)*p.Input + float64(t.Output)*p.Output + float64(t.CacheRead)*p.CacheRead + float64(t.CacheWrite)*p.CacheWrite) / 1e6
}

// StageDecl is a declared stage: its prompt file and its deliverable.
type StageDecl struct {
	Prompt      string
	Deliverable string
	Budget      time.Duration
	// Role names .flume/roles/<role>.md (A9).
	Role string
}

// Budget bounds (W1).
const (
	DefaultBudget = 45 * time.Minute
	MinBudget     = 5 * time.Minute
	MaxBudget     = 120 * time.Minute
)

// StageBudget is a stage's budget: its declaration's, else flume.budget,
// else 45 minutes, clamped to 5–120 minutes.
func (c *Config) StageBudget(stage string) time.Duration {
	b := c.Stages[stage].Budget
	if b == 0 {
		b = c.Budget
	}
	if b == 0 {
		b = DefaultBudget
	}
	return min(max(b, MinBudget), MaxBudget)
}

// BudgetNote says what stage gets when the budget declared for it is
// outside MinBudget–MaxBudget (W1); "" when it gets what was declared.
func (c *Config) BudgetNote(stage string) string {
	b, what := c.Stages[stage].Budget, "stage "+stage+": budget"
	if b == 0 {
		b, what = c.Budget, "flume.budget"
	}
	if got := c.StageBudget(stage); b != 0 && got != b {
		return fmt.Sprintf("%s %s is outside %s–%s: stage %s gets %s (W1)", what, b, MinBudget, MaxBudget, stage, got)
	}
	return ""
}

// LoadConfig reads .flume/config as committed at rev, over the user-level
// file at userPath (which may not exist).
func LoadConfig(ctx context.Context, runner *git.Runner, repo *git.Repo, rev, userPath string) (*Config, error) {
	cfg := newConfig()
	if userPath != "" {
		user, err := runner.ConfigFile(ctx, userPath)
		if err != nil {
			return nil, err
		}
		if err := cfg.apply(user, false); err != nil {
			return nil, fmt.Errorf("%s: %w", userPath, err)
		}
	}
	entries, err := repo.ConfigAt(ctx, rev, ConfigPath)
	if err != nil {
		return nil, err
	}
	if err := cfg.apply(entries, true); err != nil {
		return nil, fmt.Errorf("%s at %s: %w", ConfigPath, rev, err)
	}
	return cfg, nil
}

func newConfig() *Config {
	return &Config{Kinds: map[string][]string{}, Stages: map[string]StageDecl{}, Agents: map[string]agent.Program{}, Prices: map[string]Price{}, LandBatch: DefaultLandBatch, LandTimeout: DefaultLandTimeout, Runners: map[string]RunnerDecl{}}
}

// LoadFiles reads config files on disk, later files winning: the
// user-level file and a workspace root's .flume/config, which is a plain
// file, not a commit's. Readying and remove steps are never taken from
// them.
func LoadFiles(ctx context.Context, runner *git.Runner, paths ...string) (*Config, error) {
	cfg := newConfig()
	for _, p := range paths {
		if p == "" {
			continue
		}
		entries, err := runner.ConfigFile(ctx, p)
		if err != nil {
			return nil, err
		}
		if err := cfg.apply(entries, false); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return cfg, nil
}

// apply adds one file's entries. Only the repository's file declares
// readying and remove steps: they run in its worktrees.
func (c *Config) apply(entries []gitconfig.Entry, repoFile bool) error {
	steps := stepSections{"ready": {key: "step", into: &c.Ready}, "land": {key: "check", into: &c.Land},
		"remove": {key: "step", into: &c.Remove, outsideKey: "outside", outside: &c.RemoveOutside}}
	caches := map[string]*[]string{"ready": &c.ReadyCaches, "remove": &c.RemoveCaches}
	kindsHere := map[string]bool{}
	for _, e := range entries {
		section, sub, name := splitKey(e.Key)
		var err error
		switch {
		case section == "land" && name != "check" && name != "shell" && repoFile:
			err = c.applyLand(name, e.Value)
		case name == "cache" && caches[section] != nil && repoFile:
			err = cacheValue(caches[section], section, e.Value)
		case steps[section] != nil && repoFile:
			steps[section].take(name, e.Value)
		case section == "run" && repoFile:
			err = c.Run.apply(name, e.Value)
		case section == "submit" && name == "command" && repoFile:
			c.Submit = e.Value
		case section == "notify" && (name == "command" || name == "shell") && !(repoFile && c.notifyFromUser):
			// The user's notifier wins: where a person is told is theirs.
			if name == "command" {
				c.Notify.Command = e.Value
			} else {
				c.Notify.Shell = isTrue(e.Value)
			}
		case section == "notify" && name == "export" && !(repoFile && c.exportFromUser):
			c.NotifyExport, err = exportMoments(e.Value)
			c.exportFromUser = !repoFile
		case section == "kind" && name == "stage" && sub != "":
			if !kindsHere[sub] {
				// This file's declaration of a kind replaces an
				// earlier file's.
				c.Kinds[sub] = nil
				kindsHere[sub] = true
			}
			c.Kinds[sub] = append(c.Kinds[sub], e.Value)
		case section == "flume":
			err = c.applyFlume(name, e.Value)
		case section == "agent" && sub != "":
			err = c.applyAgent(sub, name, e.Value)
		case section == "stage" && sub != "":
			err = c.applyStage(sub, name, e.Value)
		case section == "price" && sub != "":
			err = c.applyPrice(sub, name, e.Value)
		case section == "runner" && sub != "":
			err = c.applyRunner(sub, name, e.Value, repoFile)
		}
		if err != nil {
			return err
		}
	}
	if !repoFile && c.Notify.Command != "" {
		c.notifyFromUser = true
	}
	for _, sec := range steps {
		sec.done()
	}
	return nil
}

// ExportMoments are the moments [notify] export may name.
var ExportMoments = []string{"finished", "blocked", "delegated"}

// exportMoments reads [notify] export: moments separated by commas or
// spaces, each one of ExportMoments.
func exportMoments(v string) ([]string, error) {
	var out []string
	for _, m := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if !slices.Contains(ExportMoments, m) {
			return nil, fmt.Errorf("notify.export: %q is not one of %s", m, strings.Join(ExportMoments, ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

// stepSections are the sections that list repository steps ([ready] step,
// [remove] step and outside, [land] check), each with a shell key for all
// its steps.
type stepSections map[string]*stepSection

type stepSection struct {
	key                string
	commands, outsides []string
	shell              bool
	into               *[]Step
	// outsideKey names the section's steps run outside its boundary,
	// gathered in outside; "" where it has none.
	outsideKey string
	outside    *[]Step
}

func (s *stepSection) take(name, value string) {
	switch name {
	case s.key:
		s.commands = append(s.commands, value)
	case "shell":
		s.shell = isTrue(value)
	case s.outsideKey:
		s.outsides = append(s.outsides, value)
	}
}

// done appends the section's steps, each with the section's last shell.
func (s *stepSection) done() {
	for _, cmd := range s.commands {
		*s.into = append(*s.into, Step{Command: cmd, Shell: s.shell})
	}
	for _, cmd := range s.outsides {
		*s.outside = append(*s.outside, Step{Command: cmd, Shell: s.shell})
	}
}

// DefaultLandBatch is how many entries the lander tests together when
// the repository does not say ([land] batch).
const DefaultLandBatch = 8

// MaxLandBatch bounds [land] batch: a batch's places are named in each
// of its entries' proofs.
const MaxLandBatch = 32

func (c *Config) applyLandBatch(value string) error {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < 1 || n > MaxLandBatch {
		return fmt.Errorf("[land] batch = %q: want a whole number from 1 to %d", value, MaxLandBatch)
	}
	c.LandBatch = n
	return nil
}

// applyLand takes a [land] setting besides its checks (Q5, Q7–Q9).
func (c *Config) applyLand(name, value string) error {
	switch name {
	case "batch":
		return c.applyLandBatch(value)
	case "approve":
		c.LandApprove = isTrue(value)
	case "remote":
		c.LandRemote = value
	case "auto":
		c.LandAuto = isTrue(value)
	case "merge":
		return c.applyLandMerge(value)
	case "cache":
		return cacheValue(&c.LandCaches, "land", value)
	case "timeout":
		d, err := time.ParseDuration(strings.TrimSpace(value))
		if err != nil || d < time.Second || d > MaxLandTimeout {
			return fmt.Errorf("[land] timeout = %q: want a duration from 1s to %s (say 30m)", value, MaxLandTimeout)
		}
		c.LandTimeout = d
	}
	return nil
}

// DefaultLandTimeout is how long one lander check may run when the
// repository does not say ([land] timeout); MaxLandTimeout bounds it.
const (
	DefaultLandTimeout = 30 * time.Minute
	MaxLandTimeout     = 24 * time.Hour
)

// cacheValue adds a section's cache folder: absolute, or under ~/.
func cacheValue(into *[]string, section, value string) error {
	if !filepath.IsAbs(value) && !strings.HasPrefix(value, "~/") {
		return fmt.Errorf("[%s] cache = %q: want an absolute folder or one under ~/", section, value)
	}
	*into = append(*into, value)
	return nil
}

func (c *Config) applyLandMerge(value string) error {
	switch value {
	case "merge", "squash":
		c.LandSquash = value == "squash"
		return nil
	}
	return fmt.Errorf("[land] merge = %q: want merge or squash", value)
}

// RunnerDecl is a [runner "NAME"] section: where places launched --on it
// are made, by stock git flume run there (issue 45).
type RunnerDecl struct {
	Name string
	// Kind is "ssh" (Host, and Path: its clone there) or "command"
	// (Start: a line that runs git flume run-here somewhere that reaches
	// the same git remote; {place}, {branch}, {remote}, {runner} filled
	// in). A command runner's Exec line runs {command}, a git flume
	// command line as one shell word, where a place of it lives, in its
	// clone (the operator's verbs, M3); Attach, when given, does so for
	// attach, with a terminal.
	Kind, Host, Path, Start, Exec, Attach string
	// SSHCommand is the ssh an ssh runner runs (default ssh), words split
	// as a step's are: as git's core.sshCommand.
	SSHCommand string
	// Env names the caller's variables its lines get besides a
	// repository step's (X4): say a cluster's credentials ([runner] env,
	// names split by spaces or commas; a trailing * keeps every variable
	// it begins). An ssh runner gets SSH_AUTH_SOCK too.
	Env  []string
	user bool
}

// Environ is the environment a runner's lines run in (M1, X4): a
// repository step's (X4), with the caller's variables its declaration
// names; never the caller's whole environment.
func (r RunnerDecl) Environ(caller []string) []string {
	names := slices.Clip(r.Env)
	if r.Kind == "ssh" {
		names = append(names, "SSH_AUTH_SOCK")
	}
	return proc.StepEnv(caller, proc.KeepEnv(caller, names...)...)
}

func (c *Config) applyRunner(name, key, value string, repoFile bool) error {
	if err := refs.ValidateName("runner", name); err != nil {
		return err
	}
	r := c.Runners[name]
	if repoFile && r.user {
		return nil // the user's runner of that name wins
	}
	r.Name, r.user = name, !repoFile
	switch key {
	case "kind":
		if value != "ssh" && value != "command" {
			return fmt.Errorf("[runner %q] kind = %q: want ssh or command", name, value)
		}
		r.Kind = value
	case "host":
		r.Host = value
	case "path":
		r.Path = value
	case "start":
		r.Start = value
	case "exec":
		r.Exec = value
	case "attach":
		r.Attach = value
	case "sshcommand":
		r.SSHCommand = value
	case "env":
		for _, n := range strings.FieldsFunc(value, func(c rune) bool { return c == ' ' || c == ',' || c == '\t' }) {
			if !envName.MatchString(n) {
				return fmt.Errorf("[runner %q] env = %q: %q is not a variable's name", name, value, n)
			}
			r.Env = append(r.Env, n)
		}
	}
	c.Runners[name] = r
	return nil
}

// envName is a variable's name, or the start of some ending in *.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)

// Check says what a runner lacks to be used, nil when it has it all.
func (r RunnerDecl) Check() error {
	switch {
	case r.Kind == "ssh" && (r.Host == "" || r.Path == "" || strings.HasPrefix(r.Host, "-")):
		return fmt.Errorf("runner %s: an ssh runner needs host and path (the runner's clone there)", r.Name)
	case r.Kind == "command" && r.Start == "":
		return fmt.Errorf("runner %s: a command runner needs start", r.Name)
	case r.Kind == "":
		return fmt.Errorf("runner %s: no kind (ssh or command)", r.Name)
	}
	return nil
}

func (c *Config) applyFlume(name, value string) error {
	var err error
	switch name {
	case "sandbox":
		switch strings.ToLower(value) {
		case "on", "true", "yes", "1":
			c.NoSandbox = false
		case "off", "false", "no", "0":
			c.NoSandbox = true
		default:
			return fmt.Errorf("flume.sandbox: want on or off, got %q", value)
		}
	case "budget":
		if c.Budget, err = time.ParseDuration(value); err != nil {
			return fmt.Errorf("flume.budget: %w", err)
		}
	case "stuckafter":
		if c.StuckAfter, err = time.ParseDuration(value); err == nil && c.StuckAfter <= 0 {
			err = fmt.Errorf("want a positive duration, got %q", value)
		}
		if err != nil {
			return fmt.Errorf("flume.stuckAfter: %w", err)
		}
	}
	return nil
}

// applyAgent takes one key of an [agent "NAME"] section.
func (c *Config) applyAgent(sub, name, value string) error {
	a := c.Agents[sub]
	a.Name = sub
	switch name {
	case "command":
		argv, err := splitWords(value)
		if err != nil {
			return fmt.Errorf("agent %q: command: %w", sub, err)
		}
		a.Command = argv
	case "resume":
		argv, err := splitWords(value)
		if err != nil {
			return fmt.Errorf("agent %q: resume: %w", sub, err)
		}
		a.Resume = argv
	case "transcript":
		a.Transcript = value
	case "format":
		a.Format = value
	case "state":
		a.State = append(a.State, value)
	default:
		return nil
	}
	c.Agents[sub] = a
	return nil
}

// applyStage takes one key of a [stage "NAME"] section.
func (c *Config) applyStage(sub, name, value string) error {
	d := c.Stages[sub]
	switch name {
	case "role":
		if err := refs.ValidateName("role", value); err != nil {
			return fmt.Errorf("stage %q: %w", sub, err)
		}
		d.Role = value
	case "budget":
		b, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("stage %q: budget: %w", sub, err)
		}
		d.Budget = b
	case "prompt":
		d.Prompt = value
	case "deliverable":
		if err := checkDeliverable(value); err != nil {
			return fmt.Errorf("stage %q: %w", sub, err)
		}
		d.Deliverable = value
	default:
		return nil
	}
	c.Stages[sub] = d
	return nil
}

// applyPrice takes one key of a [price "MODEL"] section: dollars per
// million tokens (W6).
func (c *Config) applyPrice(sub, name, value string) error {
	v, err := strconv.ParseFloat(value, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("price %q: %s: want dollars per million tokens, got %q", sub, name, value)
	}
	pr := c.Prices[sub]
	switch name {
	case "input":
		pr.Input = v
	case "output":
		pr.Output = v
	case "cacheread":
		pr.CacheRead = v
	case "cachewrite":
		pr.CacheWrite = v
	default:
		return fmt.Errorf("price %q: unknown key %q (input, output, cacheRead, cacheWrite)", sub, name)
	}
	c.Prices[sub] = pr
	return nil
}

// splitKey splits "kind.Sub.Name" into its section, subsection and name.
func splitKey(key string) (section, sub, name string) {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return key, "", ""
	}
	if first == last {
		return key[:first], "", key[first+1:]
	}
	return key[:first], key[first+1 : last], key[last+1:]
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1", "":
		return true
	}
	return false
}

// splitWords splits a command line into words without a shell: blanks
// separate words, '…' quotes literally, "…" quotes with \" and \\ escapes, and
// a backslash outside quotes escapes the next character. No expansion of
// any kind happens.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}
