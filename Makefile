# SPDX-License-Identifier: Apache-2.0
# mod_slidinglimit -- build, install, test, demo, bench.
#
#   make            build .libs/mod_slidinglimit.so: one object per source
#                   file, as apxs would (make -j2 compiles two at a time)
#   make check      build, then the unit tests and the suite (event MPM)
#                   without installing anything; says what is missing
#   make install    install it with apxs, its a2enmod files and
#                   slidinglimit-client; make uninstall removes them
#   make deb        build the Debian package into build/
#   make test-package  (root) build, install, use and purge the package
#                   inside throwaway Debian 12 and 13 roots (t/package.sh);
#                   the host's own apache2 is never touched
#   make test       install what is missing, build, check the imports
#                   (abi-check), run the whole suite, then the sanitizer pass
#                   and the tested stacks' CI rows (make compat-ci)
#   make abi-check  the module imports no httpd, APR, APR-util or hiredis
#                   function newer than RHEL 7's (tools/abi-baseline.txt)
#   make sanitize   the unit tests and the suite (event MPM) with the module
#                   under ASan+UBSan, in a copy of the tree (t/sanitize.sh)
#   make SANITIZE=1 build the module (and `make unit` the tests) with
#                   -fsanitize=address,undefined; such a module needs httpd
#                   started by t/sanitize-httpd
#   make demo       start a private redis + httpd and show a burst hit 429
#   make demo-stop  stop what make demo started
#   make bench      benchmark against the baseline and the peers
#   make soak       bounded soak with Redis restarts: child memory and fds,
#                   then a one-child leak check of the failure paths
#   make format     apply .clang-format
#   make compat     the tested stacks: Debian 11, 12 and 13 roots made with
#                   mmdebstrap from Debian's registry, Redis and Valkey
#                   (tools/compat/; README, Tested stacks); make compat-ci
#                   runs the rows that make test runs

APXS      ?= $(shell command -v apxs 2>/dev/null || command -v apxs2 2>/dev/null || echo apxs)
# One object per source file, compiled as apxs -c compiles it (its libtool,
# compiler and flags, asked of apxs once), so that an edit recompiles what
# it touches and make -j compiles in parallel; they are linked as apxs -c
# links them (libtool, apxs' LDFLAGS, -rpath LIBEXECDIR -module), into the
# mod_slidinglimit.la that apxs -i installs.
AP_VARS   := $(subst ;;, ,$(shell $(APXS) -q CC INCLUDEDIR APR_CONFIG APU_CONFIG \
                LIBEXECDIR 2>/dev/null))
AP_CC     := $(or $(word 1,$(AP_VARS)),cc)
AP_INCDIR := $(word 2,$(AP_VARS))
APR_CONFIG := $(or $(word 3,$(AP_VARS)),apr-1-config)
APU_CONFIG := $(or $(word 4,$(AP_VARS)),apu-1-config)
AP_LIBEXEC := $(or $(word 5,$(AP_VARS)),/usr/lib/apache2/modules)
AP_LIBTOOL := $(shell $(APR_CONFIG) --apr-libtool 2>/dev/null)
LIBTOOL   := $(AP_LIBTOOL) --silent
AP_CFLAGS := $(subst ;;, ,$(shell $(APXS) -q SHLTCFLAGS CFLAGS CPPFLAGS \
                NOTEST_CPPFLAGS EXTRA_CPPFLAGS EXTRA_CFLAGS 2>/dev/null)) \
             -I$(AP_INCDIR) $(shell $(APR_CONFIG) --includes 2>/dev/null) \
             $(shell $(APU_CONFIG) --includes 2>/dev/null)
AP_LDFLAGS := $(subst ;;, ,$(shell $(APXS) -q LDFLAGS NOTEST_LDFLAGS SH_LDFLAGS \
                2>/dev/null)) -rpath $(AP_LIBEXEC) -module -avoid-version \
             $(shell $(APR_CONFIG) --ldflags 2>/dev/null)
CC_WARN    = -std=gnu99 -Wall -Wextra -Wno-unused-parameter \
             -Werror=implicit-function-declaration -Werror=switch
LD_MOD     = -Wl,--version-script=$(CURDIR)/src/exports.map -lhiredis -lssl -lcrypto -lm
# make HIREDIS=PREFIX: hiredis from PREFIX/include and PREFIX/lib (found
# there at run time too) instead of the system's.
HIREDIS   ?=
comma     := ,
ifneq ($(HIREDIS),)
CC_WARN   += -I$(HIREDIS)/include
LD_MOD    := -L$(HIREDIS)/lib -Wl$(comma)-rpath$(comma)$(HIREDIS)/lib $(LD_MOD)
endif
# httpd before 2.4.7 declares APLOG_USE_MODULE's variable without
# AP_MAYBE_UNUSED: a file that does not log would warn about it.
CC_WARN   += $(if $(shell grep -s AP_MAYBE_UNUSED \
                $(AP_INCDIR)/http_config.h),,-Wno-unused-const-variable)
ifeq ($(SANITIZE),1)
CC_WARN   += -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=all
LD_MOD    += -fsanitize=address,undefined
endif
# Every file under src/ is part of the module (the unit tests build the
# pure ones on their own).
SRCS       = mod_slidinglimit.c $(sort $(wildcard src/sl_*.c))
OBJS       = $(SRCS:.c=.lo)
MODULE     = .libs/mod_slidinglimit.so
COMPILE    = $(LIBTOOL) --mode=compile --tag=disable-static $(AP_CC) $(AP_CFLAGS) $(CC_WARN)
LINK       = $(LIBTOOL) --mode=link --tag=disable-static $(AP_CC) $(AP_LDFLAGS) $(LD_MOD)
# What the objects and the module were built with: a different SANITIZE,
# HIREDIS or compiler rebuilds them (a mix of both would link).
sl_differ  = $(subst $(1),,$(2))$(subst $(2),,$(1))
sl_flags   = $(if $(call sl_differ,$(strip $(shell cat $(1) 2>/dev/null)),$(strip $(2))),\
             $(shell mkdir -p src && echo '$(strip $(2))' > $(1)))
$(call sl_flags,src/.cflags,$(COMPILE))
$(call sl_flags,src/.ldflags,$(LINK))

# Packages the build, the suite and the demo need (Debian names).
DEPS_BUILD = build-essential apache2 apache2-dev libhiredis-dev libssl-dev
DEPS_TEST  = redis-server redis-tools libapache2-mod-perl2 libwww-perl curl faketime gdb \
             openssl prometheus fail2ban
DEPS_DEB   = debhelper fakeroot lintian dpkg-dev
DEPS_BENCH = wrk gnuplot-nox libapache2-mod-evasive libapache2-mod-qos libpcre3 \
             libapache2-mod-security2 linux-perf valgrind

.PHONY: all toolchain install clean deps deps-bench test check unit sf demo demo-stop bench soak format \
        accuracy memory sanitize uninstall deb test-package compat compat-ci abi-check \
        test-wordpress test-wordpress-remove bench-stuffing

all: $(MODULE)

src/sl_scripts.h: lua/sl_prelude.lua lua/sl_check.lua lua/sl_give_back.lua lua/sl_renew.lua lua/sl_charge.lua \
                  lua/sl_allot.lua src/sl_script_layout.h tools/embed-lua.sh
	{ sh tools/embed-lua.sh lua/sl_check.lua sl_script_check && \
	  sh tools/embed-lua.sh lua/sl_give_back.lua sl_script_give_back && \
	  sh tools/embed-lua.sh lua/sl_renew.lua sl_script_renew && \
	  sh tools/embed-lua.sh lua/sl_charge.lua sl_script_charge && \
	  sh tools/embed-lua.sh lua/sl_allot.lua sl_script_allot; } > $@.tmp && \
	    mv $@.tmp $@

# An object depends on the headers its last compile read (-MMD: the .d
# next to it); before the first, every object waits for sl_scripts.h.
%.lo: %.c src/.cflags | src/sl_scripts.h toolchain
	$(COMPILE) -MMD -MP -MF $*.d -MT $@ -c -o $@ $<

-include $(SRCS:.c=.d)

# Without apxs and APR's libtool (apache2-dev) there is nothing to compile
# with: one clear error instead of commands that cannot run.
toolchain:
	@test -n "$(AP_INCDIR)" -a -n "$(AP_LIBTOOL)" || { \
	  echo "mod_slidinglimit: apxs or APR's libtool not found: run 'make deps' as root," \
	       "or install $(DEPS_BUILD)" >&2; exit 1; }

$(MODULE): $(OBJS) src/exports.map src/.ldflags
	$(LINK) -o mod_slidinglimit.la $(OBJS)

deps:
	@sh tools/deps.sh $(DEPS_BUILD) $(DEPS_TEST)

deps-bench:
	@sh tools/deps.sh $(DEPS_BUILD) $(DEPS_TEST) $(DEPS_BENCH)

# The transport's test starts its own redis-servers (plain and TLS). It
# runs even when a unit test failed, so that one run shows every failure;
# so does the file map's (docs/DEVELOPMENT.md names every file of src/ and
# lua/).
unit: src/sl_scripts.h
	@status=0; $(MAKE) -C tests/unit || status=1; \
	bash tests/transport/run.sh || status=1; \
	sh tests/filemap.sh || status=1; \
	bash tests/docs-check.sh || status=1; exit $$status

# The whole check without installing anything: what is missing (with its
# Debian package; then it stops), the module, the unit tests and the suite
# under the event MPM. SL_TEST_FILES="t/NN-x.t ..." runs those files only.
check:
	@sh tools/check-deps.sh $(APXS)
	$(MAKE) all
	$(MAKE) unit
	SL_TEST_MPMS="$${SL_TEST_MPMS:-event}" bash t/run

# The suite reads RateLimit-Policy/RateLimit with a real structured-field
# parser (npm "structured-headers", pinned by t/sf/package-lock.json), never
# vendored: installed into t/sf/node_modules, which git ignores. esbuild
# (pinned there too) bundles t/sf/parse.js with it for Node.js 12, the
# oldest Node.js of the Debian releases the suite runs on (Debian 11).
SF_PARSE = t/sf/node_modules/.sl/parse.cjs

sf: $(SF_PARSE)

t/sf/node_modules/.installed: t/sf/package.json t/sf/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || \
	    sh tools/deps.sh nodejs npm
	cd t/sf && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(SF_PARSE): t/sf/parse.js t/sf/node_modules/.installed
	cd t/sf && node node_modules/esbuild-wasm/bin/esbuild parse.js --bundle \
	    --platform=node --target=node12 --format=cjs --log-level=warning \
	    --outfile=node_modules/.sl/parse.cjs

# The suite once under event, with the sanitizers (make sanitize), except
# the files that assert wall-clock bounds, which run here without them; the
# files that say "# Runs under each MPM" under prefork too. The module asks
# an MPM only whether it has threads: worker is event to it
# (SL_TEST_MPMS="event prefork worker" bash t/run runs it). As root,
# compat-ci runs the whole suite again without the sanitizers, on Debian 13.
WALLCLOCK_FILES = $(shell grep -l '^\# Asserts wall-clock bounds' t/*.t)

test: deps
	$(MAKE) all
	$(MAKE) abi-check
	$(MAKE) unit
	$(MAKE) sf
	SL_TEST_MPMS="event prefork" SL_TEST_FIRST_FILES="$(WALLCLOCK_FILES)" bash t/run
	$(MAKE) sanitize
	$(MAKE) compat-ci

# The checker's own test first (it must fail on what it exists to catch),
# then the module's imports against tools/abi-baseline.txt, which
# tools/abi-baseline.sh makes from Debian's source packages; no network.
abi-check: $(MODULE)
	sh tests/abi/run.sh
	sh tools/abi-check.sh $(MODULE)

sanitize: deps
	$(MAKE) sf
	bash t/sanitize.sh

demo: deps
	$(MAKE) all
	bash tools/demo.sh start

demo-stop:
	bash tools/demo.sh stop

bench: deps-bench
	$(MAKE) all bench/results/scripts
	bash bench/run.sh

# A real WordPress (Debian's packages, its own MariaDB on 127.0.0.1) behind
# the README's recipe (bench/wordpress.sh); cached in
# /var/tmp/slidinglimit-wordpress; test-wordpress-remove purges what it
# installed. bench-stuffing replays credential stuffing against it
# (docs/STUFFING.md).
test-wordpress: all
	bash bench/wordpress.sh test

test-wordpress-remove:
	bash bench/wordpress.sh remove

bench-stuffing: all
	timeout 900 bash bench/stuffing.sh

soak: deps-bench
	$(MAKE) all
	bash bench/soak.sh
	bash bench/leakcheck.sh

format:
	clang-format -i mod_slidinglimit.c src/*.c src/*.h tests/unit/*.c tests/unit/*.h tests/transport/*.c bench/*.c

clean:
	rm -rf .libs src/.libs *.la *.lo *.slo *.o *.d src/*.lo src/*.slo src/*.o \
	    src/*.d src/.cflags src/.ldflags src/sl_scripts.h t/sf/node_modules
	-$(MAKE) -C tests/unit clean
	rm -f tests/transport/sl_transport_test

# The tested stacks (tools/compat/run.sh): Debian roots made once with
# mmdebstrap from Debian's registry into SL_COMPAT_CACHE (default
# /var/tmp/slidinglimit-compat, outside the checkout, reused), entered
# through a throwaway overlay; the module built in each, parts of the suite,
# the unit tests and the package's test run there. Needs root; as another
# user it says so and passes nothing. compat-ci: Debian 13 with Redis (the
# whole suite, the unit tests, the package), Debian 13 and Debian 12 with
# Valkey (the store's checks; Debian 12's package).
COMPAT_CI_ROWS = debian13 debian13-valkey debian12-valkey

compat: deps
	bash tools/compat/run.sh

compat-ci: deps
	SL_COMPAT_ROWS="$(COMPAT_CI_ROWS)" bash tools/compat/run.sh

# Algorithm measurements (docs/ALGORITHMS.md); not part of `make test`.
#   make accuracy [SEED=n]   counter vs exact log on synthetic traces
#   make memory [IDS=n]      bytes per identity / per log entry in Redis,
#                            script time per call (SLOWLOG)
SEED      ?= 1
IDS       ?= 10000
APR_CFLAGS = $(shell apr-1-config --includes 2>/dev/null || echo -I/usr/include/apr-1.0)

bench/results/accuracy: bench/accuracy.c src/sl_algo.c src/sl_algo.h src/sl_reply.h
	@mkdir -p bench/results
	$(CC) -std=gnu99 -O2 -Wall -Wextra $(APR_CFLAGS) -Isrc -o $@ \
	    bench/accuracy.c src/sl_algo.c -lm

bench/results/accuracy-replay: bench/accuracy_replay.c src/sl_algo.c src/sl_algo.h src/sl_reply.h
	@mkdir -p bench/results
	$(CC) -std=gnu99 -O2 -Wall -Wextra $(APR_CFLAGS) -Isrc -o $@ \
	    bench/accuracy_replay.c src/sl_algo.c -lm

# Redis's side of a decision alone (bench/run.sh's redis-scripts row).
bench/results/scripts: bench/scripts.c
	@mkdir -p bench/results
	$(CC) -std=gnu99 -O2 -Wall -Wextra -o $@ bench/scripts.c -lhiredis -lpthread

accuracy: bench/results/accuracy bench/results/accuracy-replay
	bench/results/accuracy $(SEED)

memory:
	bash bench/memory.sh $(IDS)

# Install, uninstall and the Debian package. "make install" puts the module
# where Debian's package does (apxs' LIBEXECDIR), so install and uninstall
# refuse to run while the package owns those paths; the .conf is installed
# only where none is (it is the admin's to edit) and removed only while it
# is still the shipped one.
LIBEXECDIR ?= $(shell $(APXS) -q LIBEXECDIR 2>/dev/null || echo /usr/lib/apache2/modules)
APACHE_CONFDIR ?= /etc/apache2
BINDIR     ?= /usr/local/bin
DEB_PKG     = libapache2-mod-slidinglimit
INSTALLED   = $(LIBEXECDIR)/mod_slidinglimit.so \
              $(APACHE_CONFDIR)/mods-available/slidinglimit.load \
              $(BINDIR)/slidinglimit-client

install: $(MODULE)
	@if dpkg-query -W -f='$${Status}' $(DEB_PKG) 2>/dev/null | grep -q 'ok installed'; then \
	    echo "install: $(DEB_PKG) is installed; remove it first (apt-get purge $(DEB_PKG))" >&2; \
	    exit 1; fi
	$(APXS) -i -n slidinglimit mod_slidinglimit.la
	install -D -m 0644 conf/slidinglimit.load $(APACHE_CONFDIR)/mods-available/slidinglimit.load
	@if [ -e $(APACHE_CONFDIR)/mods-available/slidinglimit.conf ]; then \
	    echo "install: kept $(APACHE_CONFDIR)/mods-available/slidinglimit.conf"; \
	else install -m 0644 conf/slidinglimit.conf $(APACHE_CONFDIR)/mods-available/; fi
	install -D -m 0755 tools/slidinglimit-client $(BINDIR)/slidinglimit-client
	@echo "install: now a2enmod slidinglimit; apache2ctl configtest; systemctl restart apache2"

uninstall:
	@if dpkg-query -W -f='$${Status}' $(DEB_PKG) 2>/dev/null | grep -q 'ok installed'; then \
	    echo "uninstall: the files belong to $(DEB_PKG): apt-get purge $(DEB_PKG)" >&2; \
	    exit 1; fi
	@if [ -e $(APACHE_CONFDIR)/mods-enabled/slidinglimit.load ]; then \
	    a2dismod -q -f -p slidinglimit; fi
	rm -f $(INSTALLED)
	@c=$(APACHE_CONFDIR)/mods-available/slidinglimit.conf; \
	if [ -e $$c ] && ! cmp -s $$c conf/slidinglimit.conf; then \
	    echo "uninstall: kept $$c (edited)"; else rm -f $$c; fi

# Built in a copy of the tree (dh_auto_clean runs "make clean", which would
# remove the suite's node_modules here): build/$(DEB_PKG)_VERSION_ARCH.deb.
DEB_VERSION = $(shell dpkg-parsechangelog -S Version 2>/dev/null)
DEB_ARCH    = $(shell dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null)
DEB_FILE    = build/$(DEB_PKG)_$(DEB_VERSION)_$(DEB_ARCH).deb

deb:
	@sh tools/deps.sh $(DEPS_BUILD) $(DEPS_DEB)
	rm -rf build/deb && mkdir -p build/deb/src
	if git rev-parse --git-dir >/dev/null 2>&1; then \
	    git ls-files -z --cached --others --exclude-standard | \
	        grep -zv '^build/' | xargs -0 tar cf - | tar xf - -C build/deb/src; \
	else \
	    tar cf - --exclude=./build --exclude=./t/sf/node_modules --exclude=./.git . | \
	        tar xf - -C build/deb/src; \
	fi
	cd build/deb/src && dpkg-buildpackage -us -uc -b
	cp build/deb/$(DEB_PKG)_$(DEB_VERSION)_$(DEB_ARCH).deb build/
	lintian --fail-on error build/deb/*.changes
	@echo "deb: $(DEB_FILE)"

# Root only: the package built, installed, used and purged inside
# throwaway Debian 12 and 13 roots (tools/compat/run.sh, t/package.sh).
test-package: deps
	SL_COMPAT_GROUPS=package SL_COMPAT_ROWS="debian12-valkey debian13" bash tools/compat/run.sh
