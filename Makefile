# chappie: `make demo` and `make test` are all a new user needs (see README.md).
SWIFT ?= swift
PREFIX ?= $(HOME)/.local
SWIFT_BUILD_FLAGS ?=
# Where the scripts find the binaries this build made (with the same flags).
BIN = $$($(SWIFT) build --show-bin-path $(SWIFT_BUILD_FLAGS))

.PHONY: deps build demo example interop test lint test-unit bench fuzz ui-check install dist migrations clean

deps:
	@scripts/install-deps.sh

build: deps
	@echo "==> Building (debug)"
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

demo: build
	@CHAPPIE_BIN="$(BIN)" scripts/demo.sh

example: build
	@CHAPPIE_BIN="$(BIN)" scripts/example.sh

interop: build
	@CHAPPIE_BIN="$(BIN)" scripts/interop.sh

test: build
	@# The metrics tests read /metrics back with prometheus_client's parser; the team-pool tests
	@# start PostgreSQL servers of their own (issue 15); the shell-hook tests run zsh and fish; systemd-analyze rates the documented unit.
	@scripts/install-deps.sh python3-prometheus-client postgresql zsh fish systemd
	@echo "==> Building the tests"
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --product generate-manual $(SWIFT_BUILD_FLAGS)
	@$(MAKE) --no-print-directory lint
	@echo "==> Running the test suite"
	$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS)

# The fast tests: everything but the end-to-end suites (tagged .slow, in Tests/EndToEndTests),
# which run the real binaries, the emulator process and the Codex CLI. About half a minute.
test-unit: build
	@scripts/install-deps.sh postgresql
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS) --skip '^EndToEndTests\.'

# Style (.swift-format), each target's imports against Package.swift, and the SDK's DocC catalog
# with warnings as errors (its symbol links). Run by `make test`, so by CI.
lint: build
	@echo "==> Lint: swift format, target imports, DocC"
	$(SWIFT) format lint --strict --recursive --configuration .swift-format Sources Tests Benchmarks Examples Fuzz Package.swift
	@scripts/check-imports.py
	@SWIFT=$(SWIFT) scripts/docs.sh

# Every decoder of outside input under libFuzzer and AddressSanitizer, FUZZ_SECONDS (60) each;
# not part of make test (docs/security.md, "Fuzzing").
fuzz: deps
	@scripts/install-deps.sh python3
	@scripts/fuzz.sh

ui-check:
	@scripts/install-deps.sh chromium sqlite3 python3
	$(SWIFT) build --product chappie $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --product chappie-full $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --product chappie-emulator $(SWIFT_BUILD_FLAGS)
	@CHAPPIE_BIN="$(BIN)" scripts/ui-check.sh

bench:
	@scripts/install-deps.sh sqlite3 postgresql
	@echo "==> Building the benchmark harness (release)"
	$(SWIFT) build -c release --static-swift-stdlib --product chappie $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --static-swift-stdlib --product chappie-full $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --product chappie-bench $(SWIFT_BUILD_FLAGS)
	@echo "==> Running the benchmarks"
	$$($(SWIFT) build -c release --show-bin-path)/chappie-bench

# The front binary in bin/, the full binary it hands every other command to in libexec/chappie/
# (docs/architecture.md, "Two binaries").
install: deps
	@echo "==> Building chappie and chappie-full (release, static Swift runtime)"
	$(SWIFT) build -c release --static-swift-stdlib --product chappie $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --static-swift-stdlib --product chappie-full $(SWIFT_BUILD_FLAGS)
	@echo "==> Installing $(PREFIX)/bin/chappie and $(PREFIX)/libexec/chappie/chappie-full"
	install -d "$(PREFIX)/bin" "$(PREFIX)/libexec/chappie"
	install -s -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/chappie-full" "$(PREFIX)/libexec/chappie/chappie-full"
	install -s -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/chappie" "$(PREFIX)/bin/chappie"
	@echo "==> Generating the completions and the man page"
	$(SWIFT) build --product generate-manual $(SWIFT_BUILD_FLAGS)
	scripts/install-extras.sh "$(PREFIX)/bin/chappie" "$$($(SWIFT) build --show-bin-path)/generate-manual" "$(PREFIX)"
	@echo "==> Installed. Run: $(PREFIX)/bin/chappie doctor"

# A release for machines without a Swift toolchain, in dist/: a tarball with install.sh PREFIX, and
# a .deb declaring its runtime dependencies (docs/operations.md, "Installing").
dist: deps
	@echo "==> Building chappie and chappie-full (release, static Swift runtime)"
	$(SWIFT) build -c release --static-swift-stdlib --product chappie $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build -c release --static-swift-stdlib --product chappie-full $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --product generate-manual $(SWIFT_BUILD_FLAGS)
	scripts/dist.sh "$$($(SWIFT) build -c release --show-bin-path)" "$$($(SWIFT) build --show-bin-path)/generate-manual" dist

migrations:
	@scripts/embed-migrations.sh

clean:
	rm -rf .build
