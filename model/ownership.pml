/*
 * steplog's ownership protocol, as a Promela model for SPIN (issue 17 §5).
 * Checked by test/model/ownership.test.ts; by hand:
 *
 *   spin -a model/ownership.pml && gcc -O2 -o pan pan.c && ./pan -E        safety (P1-P3, P5)
 *   spin -DLIVENESS -a model/ownership.pml && gcc -O2 -o pan pan.c && ./pan -a -f -E    P4
 *   spin -DBREAK=1 -a model/ownership.pml && ...                           must report errors
 *
 * ---------------------------------------------------------------------------------------------
 * WHAT EACH PART MIRRORS
 *
 *   Store (the globals below, every action on them one atomic block = one transaction):
 *     the lease row (epoch, holder, heartbeat), the step rows (status intended / succeeded /
 *     failed and the epoch of the attempt that wrote the intent) -- src/store/types.ts (Store
 *     contract), src/store/memory.ts (#fenced: a write is applied only while the run's lease
 *     epoch is the writer's and the lease is not released; writeOutcome refuses a row that is
 *     not `intended`), src/store/postgres/write-queue.ts (the same checks; a retry after a lost
 *     COMMIT reply first looks for its own effect).
 *   claim()   -- Store.claimRun + decideClaim (src/claim.ts) + judgeOwner / byLease
 *     (src/owner.ts) + watchLease (src/lease-watch.ts): a released lease is taken at once; a
 *     holder that is this very process (rule 4: its attempt is over) is gone; a holder on the
 *     same host (SHARED_HOST) is gone when its pid is dead, held while it is alive, and judged
 *     by its lease while it is stopped (frozen); any other holder is judged by its lease: this
 *     claimer must itself have watched the very same lease go unrenewed for a full period on
 *     its own clock (with -DSERVER_CLOCK: the store's clock age, as on Postgres).
 *   Keeper    -- LeaseKeeper (src/lease-keeper.ts): renewal every third of the lease (one tick
 *     of three); #onDeadline (the lease ran out on the holder's own timers: with a renewal that
 *     has waited a renewal interval or more the attempt stops; one only just sent gets another
 *     lease's time; with none pending it does nothing, as the code does -- see KEEPER_FIX);
 *     #renew's reply handling (refused: lost; failed after expiry: lost; failed before: nothing).
 *   Worker    -- one process running continues/a worker loop: claim, then Attempt.run
 *     (src/attempt.ts) over NSTEPS sequential steps, each by route/startAt/execute
 *     (src/step-runner.ts): before the start point a succeeded record is reused; from the first
 *     unsettled step on every step runs (even one with a succeeded record); a row found
 *     `intended` from another attempt is resolved by the default idempotent policy, "redrive"
 *     (src/unknown-outcome.ts: settle the cut-off row failed, then a new intent with the same
 *     key); execute writes the intent and waits for it to be durable (fault points
 *     "before-intent", "after-intent"), checks the attempt has not ended, calls the function
 *     (the effect), checks for a lost lease ("after-fn"), writes the outcome ("after-outcome");
 *     at the end endAttempt records the ending and releases the lease ("before-end"). A write
 *     refused by the fence ends the attempt LEASE_LOST and it writes nothing more; any other
 *     write error fails the attempt, which then tries endAttempt.
 *   Faults    -- crash (a process stops for good, at any point: every fault point above and
 *     every other), freeze and later wake (SIGSTOP/SIGCONT, a blocked host, a partition: the
 *     process takes no step meanwhile, its timers run on and fire late, and it resumes with
 *     stale local state), lost replies (a write applied but the writer told it failed: it then
 *     retries as the Postgres store does, looking for its own effect, or gives up, as the other
 *     stores do), writes that fail unapplied (disk full, store unreachable), and slow renewals
 *     (a renewal that waits for the store across ticks, then lands or fails).
 *   Clock     -- time is abstract: one global tick; every duration a process measures is a
 *     count of ticks on its own timers (a lease period is P = 3 ticks, a renewal interval 1
 *     tick). Clock OFFSETS (skew) therefore cannot matter to the sound protocol, which never
 *     compares one process's clock with another's; BREAK=2 models a claimer that does (it reads
 *     the holder's expiresAt against its own clock, ahead by SKEW ticks). An awake process's due
 *     timers fire before time moves on (urgency), so only freezing or a slow store makes a live
 *     holder miss a renewal.
 *
 * PROPERTIES (assertions, checked exhaustively by ./pan; P4 by an acceptance-cycle search)
 *   P1 no two attempts record an outcome for one step execution (one intent row);
 *   P2 a succeeded step is never run again: no attempt enters a step's function once that step
 *      has a succeeded row written by an earlier attempt (an earlier, frozen attempt may still
 *      run it: docs/recovery.md says so, and fencing refuses its outcome);
 *   P3 no effect starts without its intent durable first (the row is in the store, written by
 *      this attempt);
 *   P4 (-DLIVENESS) every run whose owner died is eventually claimed:
 *      [] (holder dead -> <> holder not dead), under weak fairness (pan -f): time keeps moving
 *      (the clock ticks whenever no due timer blocks it), every live, unfrozen process
 *      eventually takes a step it is continuously able to take (so a worker keeps polling),
 *      faults are finite (bounded budgets) and every frozen process is woken again, and at
 *      least one worker never crashes (CRASHES < NPROC);
 *   P5 no claim takes a live lease: a holder that is alive, awake, was never frozen and whose
 *      renewals all reached the store promptly is never taken over (this is what watchLease's
 *      "unrenewed for a full period on my own clock" buys; fencing alone would keep P1-P3).
 *
 * BREAK (the model must be able to fail; the test expects errors for each):
 *   1  no fence check on step writes                      -> P2 fails
 *   2  the claimer trusts the holder's expiresAt against its own clock, SKEW ticks ahead -> P5
 *   3  the function is called before its intent is durable (the write still in flight) -> P3
 *   4  no fence check and no `status = intended` check on outcomes               -> P1
 *   5  watchLease restarts its sighting at every look (a claimer never sees a full period) -> P4
 *
 * BOUNDS: NPROC workers (default 2; 3 with -DNPROC=3), one run of NSTEPS = 2 steps, fault
 * budgets CRASHES, FREEZES, WFAULTS (lost replies and unapplied writes), RFAULTS (slow
 * renewals), at most MAXROWS step rows.
 *
 * ABSTRACTED: one step row per slot (real stores key rows by seq); the group commit of an
 * idempotent step's outcome with the next intent (modelled as two writes in order: a crash
 * between them is the same loss); the value, idempotency key and `previous` (the same key is
 * kept by a redrive); retry policies, timeouts, cancels, deadlines, waits, sagas, effects other
 * than `idempotent`, fromStep/redo/reuse, handled failures, dead letters and the attempt
 * budget; the heartbeat is compared by identity (any renewal is a change a watcher sees), not
 * by the holder's wall-clock value; a renewal still in the network when its keeper has stopped
 * is dropped; clock RATES are equal (docs/recovery.md relies on that too).
 *
 * NOT COVERED: the JSONL store's lock file (proper-lockfile) and SQLite's BEGIN IMMEDIATE are
 * assumed to make each transaction atomic; Postgres's retries of a lost COMMIT reply beyond the
 * one modelled lost reply per budget unit, its SKIP LOCKED path, its connection handling; real
 * time (ms, timer drift, the 1 s poll of a waiting continue, the two-minute cap); pid reuse,
 * process start times, boot ids, pid namespaces, worker threads; several attempts in one
 * process (the live-attempt registry); several runs.
 */

#ifndef NPROC
#define NPROC 2
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef FREEZES
#define FREEZES 1
#endif
#ifndef WFAULTS
#define WFAULTS 1
#endif
#ifndef RFAULTS
#define RFAULTS 1
#endif
#ifndef BREAK
#define BREAK 0
#endif
#ifndef SKEW
#define SKEW 2
#endif

#define NSTEPS  2
#define P       3        /* a lease period, in ticks; renewals every tick: a third of it */
#define MAXROWS 6
#define NONE    255

/* step row status */
#define INT  1
#define SUC  2
#define FAIL 3

/* the answer a writer gets */
#define W_OK       0
#define W_REFUSED  1     /* LEASE_LOST: the fence refused it; nothing written */
#define W_LOSTREP  2     /* applied, but the reply was lost: the writer sees an error */
#define W_ERR      3     /* not applied: the store could not be reached, disk full */
#define W_INTERNAL 4     /* an outcome for a row that is not intended: refused */

/* a renewal in progress (LeaseKeeper #renewing) */
#define R_IDLE 0
#define R_SENT 1
#define R_LOST 3
#define R_ERR  4

/* ---------------- the store ---------------- */
byte epoch = 0;                 /* the lease's fencing epoch */
byte holder = NONE;             /* the process whose attempt holds the lease; NONE once released */
bool completed = 0;
byte nrows = 0;
byte rstep[MAXROWS];
byte rstat[MAXROWS];
byte repoch[MAXROWS];           /* epoch of the attempt that wrote the intent */
byte routep[MAXROWS];           /* ghost: epoch of the attempt whose outcome the row holds */
#ifdef SERVER_CLOCK
byte lwage = 0;                 /* ticks since the lease row was written, by the store's clock */
#endif
#if BREAK == 2
byte lsage = 0;                 /* ticks since the stored heartbeat was taken on its holder's clock */
#endif

/* ---------------- the processes ---------------- */
bool dead[NPROC];
bool frozen[NPROC];
byte aep[NPROC];                /* the epoch of this process's attempt (0: none running) */
bool lost[NPROC];               /* the attempt ended LEASE_LOST (endReason) */
bool healthy[NPROC];            /* ghost (P5): never frozen, every renewal prompt, this attempt */
/* LeaseKeeper */
bool krun[NPROC];               /* its interval timer is set (start() .. stop()) */
bool rtick[NPROC];              /* the interval timer is due */
bool darmed[NPROC];             /* the deadline timer is set */
byte hexp[NPROC];               /* ticks until #expiresAt on the holder's own timers */
byte rst[NPROC];                /* the renewal under way */
byte rsince[NPROC];             /* ticks since it was sent (#renewingSince) */
bool rslow[NPROC];              /* it may wait for the store across ticks (a fault) */
/* watchLease: this process's sighting of the current lease */
bool wseen[NPROC];
byte wsince[NPROC];

/* fault budgets */
byte crashes = CRASHES;
byte freezes = FREEZES;
byte wfaults = WFAULTS;
byte rfaults = RFAULTS;

#if BREAK == 1 || BREAK == 4
#define FENCED(e) (true)
#else
#define FENCED(e) (epoch == (e) && holder != NONE)
#endif

/* A due timer of an awake holder fires before time moves on; so does a prompt renewal. */
#define URGENT(q) (!dead[q] && !frozen[q] && krun[q] && (rtick[q] || (darmed[q] && hexp[q] == 0) || (rst[q] != R_IDLE && !rslow[q])))
#if NPROC == 2
#define ANYURGENT (URGENT(0) || URGENT(1))
#else
#define ANYURGENT (URGENT(0) || URGENT(1) || URGENT(2))
#endif

/* P4's premise: the lease is held by an attempt whose process died. */
#define hdead (holder != NONE && dead[holder])

#ifdef SHARED_HOST
/* processes 0 and 1 run on one host (pid namespace): a pid decides between them */
#define SAMEHOST(a, b) ((a) < 2 && (b) < 2)
#else
#define SAMEHOST(a, b) (false)
#endif

/* The lease row changed (a renewal, a claim, a release): every sighting of it is out of date. */
inline leaseChanged() {
  wseen[0] = 0; wsince[0] = 0;
  wseen[1] = 0; wsince[1] = 0;
#if NPROC == 3
  wseen[2] = 0; wsince[2] = 0;
#endif
#ifdef SERVER_CLOCK
  lwage = 0;
#endif
}

/* LeaseKeeper.stop(): no more timers. A renewal in flight is forgotten. */
inline stopKeeper(q) {
  healthy[q] = 0; krun[q] = 0; rtick[q] = 0; darmed[q] = 0; hexp[q] = 0; rst[q] = R_IDLE; rsince[q] = 0; rslow[q] = 0
}

/* ---------------- the clock ---------------- */
inline tickOne(q) {
  if
  :: krun[q] && !dead[q] ->
     rtick[q] = 1;
     if :: hexp[q] > 0 -> hexp[q]-- :: else fi;
     if :: rst[q] != R_IDLE && rsince[q] < P -> rsince[q]++ :: else fi
  :: else
  fi;
  if :: wseen[q] && wsince[q] < P -> wsince[q]++ :: else fi
}

active proctype Clock() {
end:
  do
  :: atomic {
       !ANYURGENT ->
       tickOne(0); tickOne(1);
#if NPROC == 3
       tickOne(2);
#endif
#ifdef SERVER_CLOCK
       if :: lwage < P -> lwage++ :: else fi;
#endif
#if BREAK == 2
       if :: lsage < P -> lsage++ :: else fi;
#endif
       skip
     }
  od
}

/* The store receives a renewal (renewLease: fenced); its reply may be lost. */
inline renewalArrives() {
  if
  :: FENCED(aep[me]) ->
     leaseChanged();
#if BREAK == 2
     lsage = rsince[me];
#endif
     if
     :: wfaults > 0 -> wfaults--; healthy[me] = 0;
        if
        :: rst[me] = R_ERR          /* the reply is lost: an error */
        :: rst[me] = R_SENT         /* Postgres: run again on a new connection */
        fi
     :: true ->                     /* recorded: the deadline moves on (#armDeadline) */
        hexp[me] = P - rsince[me]; darmed[me] = 1; rst[me] = R_IDLE; rsince[me] = 0; rslow[me] = 0
     fi
  :: else -> rst[me] = R_LOST
  fi
}

/* ---------------- the lease keeper of process `me` ---------------- */
proctype Keeper(byte me) provided (!frozen[me]) {
end:
  do
  /* the interval timer: renew, unless a renewal is still under way */
  :: atomic {
       krun[me] && rtick[me] -> rtick[me] = 0;
       if
       :: rst[me] == R_IDLE ->
          rst[me] = R_SENT; rsince[me] = 0;
          if
          :: rfaults > 0 -> rfaults--; rslow[me] = 1; healthy[me] = 0  /* the store is slow or cut off */
          :: true -> renewalArrives()                                   /* it reaches the store at once */
          fi
       :: else
       fi
     }
  /* a slow renewal reaches the store */
  :: atomic { krun[me] && rst[me] == R_SENT -> renewalArrives() }
  /* a slow renewal fails without reaching the store */
  :: atomic { krun[me] && rst[me] == R_SENT && rslow[me] -> rst[me] = R_ERR }
  /* the replies (#renew) */
  :: atomic { krun[me] && rst[me] == R_LOST -> stopKeeper(me); lost[me] = 1 }
  :: atomic {
       krun[me] && rst[me] == R_ERR ->
       if
       :: hexp[me] == 0 -> stopKeeper(me); lost[me] = 1     /* failed until the lease expired */
       :: else -> rst[me] = R_IDLE; rsince[me] = 0; rslow[me] = 0
       fi
     }
  /* the deadline timer (#onDeadline) */
  :: atomic {
       krun[me] && darmed[me] && hexp[me] == 0 -> darmed[me] = 0;
       if
       :: rst[me] == R_IDLE ->
#ifdef KEEPER_FIX
          stopKeeper(me); lost[me] = 1
#else
          skip                                              /* as the code does: nothing */
#endif
       :: else ->
          if
          :: rsince[me] < 1 -> hexp[me] = P - rsince[me]; darmed[me] = 1   /* only just sent: it decides */
          :: else -> stopKeeper(me); lost[me] = 1
          fi
       fi
     }
  od
}

/* ---------------- writes of an attempt (every one fenced) ---------------- */

/* An answer may be spoilt: the write applied and its reply lost, or not applied at all. */
inline spoil(res) {
  if
  :: res == W_OK && wfaults > 0 -> wfaults--; res = W_LOSTREP
  :: true
  fi
}

/* writeIntent: a new row `intended`; `slot` is its seq (NONE while none was written). */
inline writeIntent(s, slot, res, retrying) {
  if
  :: !retrying && wfaults > 0 -> wfaults--; res = W_ERR          /* not applied */
  :: true ->
     if
     :: retrying && slot != NONE ->
        /* #sameStep: our own row, exactly as written (still intended) */
        if
        :: rstat[slot] == INT -> res = W_OK
        :: else -> res = W_REFUSED
        fi
     :: else ->
        if
        :: FENCED(aep[me]) ->
           assert(nrows < MAXROWS);
           slot = nrows; nrows++;
           rstep[slot] = s; rstat[slot] = INT; repoch[slot] = aep[me]; routep[slot] = 0;
           res = W_OK
        :: else -> res = W_REFUSED
        fi
     fi;
     spoil(res)
  fi
}

/* writeOutcome on row `slot`: applied only under the live lease and while the row is intended. */
inline writeOutcome(slot, st, res, retrying) {
  if
  :: !retrying && wfaults > 0 -> wfaults--; res = W_ERR          /* not applied */
  :: true ->
     if
     :: retrying && rstat[slot] == st && routep[slot] == aep[me] -> res = W_OK   /* already(): ours */
     :: else ->
        if
        :: !FENCED(aep[me]) -> res = W_REFUSED
#if BREAK != 4
        :: FENCED(aep[me]) && rstat[slot] != INT -> res = W_INTERNAL
        :: FENCED(aep[me]) && rstat[slot] == INT ->
#else
        :: FENCED(aep[me]) ->
#endif
           /* P1: rows start intended and an outcome moves them away for good, so this says
              no row gets a second outcome */
           assert(rstat[slot] == INT);
           rstat[slot] = st; routep[slot] = aep[me];
           res = W_OK
        fi
     fi;
     spoil(res)
  fi
}

/* endAttempt: the ending recorded and the lease released, in one transaction. */
inline endAttempt(res, retrying, done) {
  if
  :: !retrying && wfaults > 0 -> wfaults--; res = W_ERR          /* not applied */
  :: true ->
     if
     :: retrying && epoch == aep[me] && holder == NONE -> res = W_OK     /* our own ending, recorded */
     :: else ->
        if
        :: epoch == aep[me] && holder != NONE ->
           holder = NONE; leaseChanged();
           if :: done -> completed = 1 :: else fi;
           res = W_OK
        :: else -> res = W_REFUSED
        fi
     fi;
     spoil(res)
  fi
}

/* The attempt's view of step k, read in the claim's transaction: its latest row. */
inline snapshot(k, st, sl) {
  st = 0; sl = NONE; i = 0;
  do
  :: i < nrows ->
     if :: rstep[i] == k -> st = rstat[i]; sl = i :: else fi;
     i++
  :: else -> break
  od;
  i = 0
}

/* the worker's phases */
#define PH_CLAIM   0
#define PH_SETTLE  1
#define PH_INTENT  2
#define PH_CALL    3
#define PH_OUTCOME 4
#define PH_END     5

/* The attempt's local state, forgotten when it ends. */
inline forget() {
  s = 0; slot = NONE; res = 0; started = 0; retrying = 0; done = 0; entry = 0;
  lst0 = 0; lst1 = 0; lslot0 = 0; lslot1 = 0; phase = PH_CLAIM
}

/* The attempt ended LEASE_LOST: it writes nothing more; its keeper stops (Attempt.#leaseLost). */
inline leaseLost() {
  stopKeeper(me); lost[me] = 0; aep[me] = 0; forget()
}

#define LST(k)   ((k) == 0 -> lst0 : lst1)
#define LSLOT(k) ((k) == 0 -> lslot0 : lslot1)

/*
 * route/startAt for the next step, from the attempt's view: before the start point a succeeded
 * record is reused; the first step without one is the start point, and from there every step
 * runs; a row left intended by another attempt is resolved first (redrive).
 */
inline advance() {
  do
  :: s < NSTEPS && !started && LST(s) == SUC -> s++
  :: else -> break
  od;
  retrying = 0; entry = 1;
  if
  :: s == NSTEPS -> done = 1; phase = PH_END
  :: else ->
     started = 1;
     if
     :: LST(s) == INT -> slot = LSLOT(s); phase = PH_SETTLE
     :: else -> slot = NONE; phase = PH_INTENT
     fi
  fi
}

/* A write failed with an error other than LEASE_LOST: run it again (Postgres) or give up. */
#define RETRY_OR_FAIL  if :: retrying = 1 :: retrying = 0; done = 0; entry = 0; phase = PH_END fi

/* ---------------- a worker process: continues of the run, one after another ---------------- */
proctype Worker(byte me) provided (!frozen[me]) {
  byte phase = PH_CLAIM;
  byte s, slot = NONE, res, i, prev;
  byte lst0, lst1, lslot0, lslot1;
  bool started, retrying, gone, done, entry;

  do
  /* claimRun(decideClaim(...)) in one transaction, again and again (a worker's polls) */
  :: atomic {
       phase == PH_CLAIM ->
       if
       :: completed -> break                                            /* RUN_COMPLETED */
       :: else
       fi;
       prev = holder;
       if
       :: holder == NONE || holder == me -> gone = 1                    /* released; rule 4 */
       :: else ->
          if
          :: SAMEHOST(holder, me) && dead[holder] -> gone = 1           /* its pid is dead */
          :: SAMEHOST(holder, me) && !dead[holder] && !frozen[holder] -> gone = 0  /* alive: held */
          :: else ->
#if BREAK == 2
             gone = (lsage >= P - SKEW)                                 /* expiresAt <= my clock */
#elif defined(SERVER_CLOCK)
             gone = (lwage >= P)                                        /* lease.ageMs >= period */
#else
             /* watchLease: a first sighting, or the same lease unrenewed for a full period */
             if
#if BREAK == 5
             :: true -> wseen[me] = 1; wsince[me] = 0; gone = 0
#else
             :: !wseen[me] -> wseen[me] = 1; wsince[me] = 0; gone = 0
             :: else -> gone = (wsince[me] >= P)
#endif
             fi
#endif
          fi
       fi;
       if
       :: gone ->
          /* P5: a live, renewing holder is never taken over */
          assert(prev == NONE || prev == me || dead[prev] || !krun[prev] || lost[prev] || !healthy[prev]);
          epoch++; holder = me; leaseChanged();
#if BREAK == 2
          lsage = 0;
#endif
          aep[me] = epoch; lost[me] = 0; healthy[me] = 1;
          krun[me] = 1; rtick[me] = 0; darmed[me] = 1; hexp[me] = P; rst[me] = R_IDLE; rsince[me] = 0; rslow[me] = 0;
          snapshot(0, lst0, lslot0); snapshot(1, lst1, lslot1);
          s = 0; started = 0; gone = 0; prev = 0;
          /* the claim's reply may be lost: Postgres finds its own attempt holding the lease; the others fail the continue */
          if
          :: wfaults > 0 -> wfaults--; healthy[me] = 0;
             if
             :: advance()
             :: stopKeeper(me); aep[me] = 0; forget()                   /* the lease stays taken, unused */
             fi
          :: true -> advance()
          fi
       :: else -> prev = 0                                              /* RUN_BUSY: look again */
       fi
     }

  /* resolveUnknownOutcome, policy redrive: the cut-off row is settled failed */
  :: atomic {
       phase == PH_SETTLE ->
       if
       :: entry && lost[me] -> leaseLost()                              /* assertRunning */
       :: else ->
          entry = 0;
          writeOutcome(slot, FAIL, res, retrying);
          if
          :: res == W_OK -> retrying = 0; slot = NONE; phase = PH_INTENT   /* execute(), same key */
          :: res == W_REFUSED -> leaseLost()
          :: res == W_LOSTREP || res == W_ERR -> RETRY_OR_FAIL
          :: res == W_INTERNAL -> retrying = 0; done = 0; phase = PH_END
          fi
       fi
     }

  /* execute: the intent, durable before the function is called (fault point before-intent) */
  :: atomic {
       phase == PH_INTENT ->
       if
       :: entry && lost[me] -> leaseLost()                              /* assertRunning */
       :: else ->
          entry = 0;
#if BREAK == 3
          /* the function is called while the intent is still on its way */
          assert(slot != NONE && slot < nrows && rstep[slot] == s && repoch[slot] == aep[me]);   /* P3 */
#endif
          writeIntent(s, slot, res, retrying);
          if
          :: res == W_OK -> retrying = 0; phase = PH_CALL
          :: res == W_REFUSED -> leaseLost()
          :: res == W_LOSTREP || res == W_ERR -> RETRY_OR_FAIL
          fi
       fi
     }

  /* fault point after-intent; then the function is entered: the effect starts */
  :: atomic {
       phase == PH_CALL ->
       if
       :: lost[me] -> leaseLost()                                       /* endedBefore */
       :: else ->
          assert(slot != NONE && slot < nrows && rstep[slot] == s && repoch[slot] == aep[me]);   /* P3 */
          i = 0;
          do
          :: i < nrows -> assert(!(rstep[i] == s && rstat[i] == SUC && routep[i] < aep[me])); i++   /* P2 */
          :: else -> break
          od;
          i = 0; phase = PH_OUTCOME
       fi
     }

  /* ... the function runs (it may be cut off, frozen, or outlive its lease); it returns:
     fault point after-fn, then the outcome */
  :: atomic {
       phase == PH_OUTCOME ->
       if
       :: lost[me] -> leaseLost()                                       /* endedWhileRunning: lease-lost */
       :: else ->
          writeOutcome(slot, SUC, res, retrying);
          if
          :: res == W_OK ->                                             /* fault point after-outcome */
             slot = NONE; s++; advance()
          :: res == W_REFUSED -> leaseLost()
          :: res == W_LOSTREP || res == W_ERR -> RETRY_OR_FAIL
          :: res == W_INTERNAL -> retrying = 0; done = 0; phase = PH_END
          fi
       fi
     }

  /* fault point before-end; endAttempt records the ending and releases the lease */
  :: atomic {
       phase == PH_END ->
       if
       :: lost[me] -> leaseLost()                                       /* #finish: lease-lost */
       :: else ->
          endAttempt(res, retrying, done);
          if
          :: res == W_OK -> stopKeeper(me); aep[me] = 0; forget()
          :: res == W_REFUSED -> leaseLost()
          :: res == W_LOSTREP || res == W_ERR ->
             if
             :: retrying = 1
             :: stopKeeper(me); aep[me] = 0; forget()                   /* the attempt returns; its keeper stops */
             fi
          fi
       fi
     }
  od unless {
    atomic { dead[me] -> forget(); i = 0; prev = 0; gone = 0 }
  }
}

/* ---------------- faults ---------------- */
inline crash(q) {
  crashes--; dead[q] = 1; frozen[q] = 0; healthy[q] = 0; lost[q] = 0; aep[q] = 0;
  stopKeeper(q); wseen[q] = 0; wsince[q] = 0
}

#define FAULTS_FOR(q) \
  :: atomic { crashes > 0 && !dead[q] -> crash(q) } \
  :: atomic { freezes > 0 && !dead[q] && !frozen[q] -> freezes--; frozen[q] = 1; healthy[q] = 0 } \
  :: atomic { frozen[q] -> frozen[q] = 0 }

active proctype Faults() {
  do
  FAULTS_FOR(0)
  FAULTS_FOR(1)
#if NPROC == 3
  FAULTS_FOR(2)
#endif
  :: break
  od;
  /* no more faults: every frozen process wakes */
  atomic { frozen[0] = 0; frozen[1] = 0;
#if NPROC == 3
    frozen[2] = 0;
#endif
    skip }
}

init {
  byte q = 0;
  atomic {
    do
    :: q < NPROC -> run Keeper(q); run Worker(q); q++
    :: else -> break
    od;
    q = 0
  }
}

#ifdef LIVENESS
ltl p4 { [] (hdead -> <> !hdead) }
#endif
