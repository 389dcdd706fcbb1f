# git-flume — build, install, test.
#
#   make install            binary + man page into $(PREFIX) (default /usr/local)
#   make install PREFIX=~/.local
#   make test               the whole suite, hermetic (what CI runs)
#   make bench              benchmarks against the raw git floor, with ratios
#   make lint               golangci-lint (.golangci.yml) and deadcode, both clean

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man/man1
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

export GOTOOLCHAIN := local
# Tests build their own environment; nothing of the caller's git or XDG
# setup may leak into them.
unexport GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR
unexport XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CACHE_HOME

FLUME_TOOLS ?= $(HOME)/.cache/git-flume-tools
export FLUME_TOOLS

# CI runs the full crash matrices (every member of an 8-repository
# promotion); a developer's `make test` crashes at the first, second and
# last. FLUME_FULL_MATRIX=1 make test runs them all anywhere.
ifneq ($(CI),)
export FLUME_FULL_MATRIX := 1
endif

.PHONY: all build install uninstall test test-agents bench lint clean FORCE

all: build

build: build/git-flume build/git-flume.1

# Static (no cgo): git starts git-flume for every command, and the dynamic
# loader alone was ~0.8 ms of a 5 ms start (issue 14). Nothing here needs
# cgo: DNS is never resolved and os/user falls back to /etc/passwd.
# Without urfave/cli's man and markdown generator, whose packages' init
# cost every start ~0.4 ms (issue 26): the man page is made by a build
# that has it.
BUILDFLAGS := -tags urfave_cli_no_docs -ldflags "-X main.version=$(VERSION)"
build/git-flume: FORCE
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o $@ ./cmd/git-flume

build/git-flume.1: build/git-flume
	CGO_ENABLED=0 $(GO) run ./cmd/git-flume man > $@

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 build/git-flume $(DESTDIR)$(BINDIR)/git-flume
	install -m 644 build/git-flume.1 $(DESTDIR)$(MANDIR)/git-flume.1
	install -m 644 completion/git-flume.bash $(DESTDIR)$(BASHCOMPDIR)/git-flume
	install -m 644 completion/_git-flume $(DESTDIR)$(ZSHCOMPDIR)/_git-flume

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/git-flume $(DESTDIR)$(MANDIR)/git-flume.1 \
		$(DESTDIR)$(BASHCOMPDIR)/git-flume $(DESTDIR)$(ZSHCOMPDIR)/_git-flume

test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 28m ./...

# The real agent programs against the fake model server; installs them
# first (pinned, under $(FLUME_TOOLS)) when they are missing.
test-agents:
	./scripts/install-agents >/dev/null
	PATH="$(FLUME_TOOLS)/node_modules/.bin:$$PATH" FLUME_REAL_AGENTS=1 \
		$(GO) test -count=1 -timeout 20m -parallel 3 -run TestRealAgents ./cmd/git-flume

# golangci-lint's default linters as .golangci.yml tunes them (each
# exception says why), and deadcode with the tests as roots: both clean.
# The module builds for macOS too (vet type-checks it there).
GOLANGCI_LINT ?= github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
DEADCODE ?= golang.org/x/tools/cmd/deadcode@v0.48.0
lint:
	$(GO) run $(GOLANGCI_LINT) run ./...
	test -z "$$($(GO) run $(DEADCODE) -test ./...)"
	GOOS=darwin $(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./...

clean:
	rm -rf build
