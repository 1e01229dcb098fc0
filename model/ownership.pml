/*
 * steplog's ownership protocol, as a Promela model for SPIN (issue 17 §5).
 * test/model/ownership.test.ts checks it; by hand, in a scratch directory:
 *
 *   spin -a ownership.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -E              P1-P3, P5
 *   spin -DLIVENESS -DRFAULTS=0 -a ownership.pml && gcc -O2 -DNFAIR=3 -o pan pan.c && ./pan -a -f -E   P4
 *   spin -DBREAK=1 -a ownership.pml && gcc -DSAFETY -o pan pan.c && ./pan -E        must say errors: 1
 *
 * (-E: processes that crashed or finished are not "invalid end states"; nothing here is
 * BITSTATE or hash-compact: every search is exhaustive for its bounds.)
 *
 * ---------------------------------------------------------------------------------------------
 * WHAT EACH PART MIRRORS (paths as of this writing; the functions are the reference)
 *
 *   The store: the globals under "the store", every action on them one atomic block, i.e. one
 *     transaction. The lease row (epoch, holder, heartbeat: compared by identity, see below)
 *     and the step rows (status intended / succeeded / failed, the epoch of the attempt that
 *     wrote the intent). Store contract: src/store/types.ts. Fencing: fenceRefusal and the
 *     `status !== "intended"` check of outcome() in src/store/state-machine.ts (the memory and
 *     JSONL stores), the same checks in src/store/sqlite and src/store/postgres/write-queue.ts
 *     (#apply: a retry after a lost COMMIT reply first looks for its own effect, #sameStep /
 *     already()). A write is applied only while the run's lease epoch is the writer's and the
 *     lease is not released (FENCED); else it is refused, LEASE_LOST, and writes nothing.
 *   Claim (Worker, phase PH_CLAIM): Store.claimRun + decideClaim (src/ownership/claim.ts) +
 *     judgeOwner / byLease (src/ownership/owner.ts) + watchLease (src/ownership/lease-watch.ts).
 *     A released lease is taken at once; a holder that is this very process is gone (rule 4:
 *     a process runs one attempt at a time here, so its own old attempt is over); with
 *     SHARED_HOST, processes 0 and 1 share a host and pid namespace: a dead pid is gone, a live
 *     one holds the run whatever its lease says, a stopped (frozen) one is judged by its lease;
 *     every other holder is judged by its lease: gone only once THIS claimer has itself watched
 *     the very same lease go unrenewed for a full period on its own clock (watchLease), or,
 *     with -DSERVER_CLOCK, once the store's own clock says the lease row is a period old
 *     (Postgres, lease.ageMs). Workers poll again and again, as engine.work does.
 *   Keeper: LeaseKeeper (src/ownership/lease-keeper.ts). start() arms the interval (one tick:
 *     a third of the period P = 3 ticks) and the deadline (#expiresAt, on the holder's own
 *     timers). #renew: one renewal under way at a time; recorded -> the deadline moves to its
 *     send time + P; refused -> lost; failed -> lost if the lease has run out, else nothing.
 *     #onDeadline: a renewal that has waited a renewal interval or more -> lost; one only just
 *     sent -> it gets another lease's time; none under way after a failed one -> lost (KEEPER_FIX, the
 *     code's behaviour; see CHECK_SELF_STOP); none tried -> nothing.
 *   Attempt (Worker, phases PH_SETTLE .. PH_END): Attempt.run (src/steps/attempt.ts) over
 *     NSTEPS = 2 sequential steps, each by route / startAt / execute (src/steps/step-runner.ts):
 *     the view of the log is read in the claim's transaction (Attempt.latest); before the start
 *     point a succeeded record is reused; the first step without one is the start point and
 *     from there every step runs (a succeeded record after it too); a row left `intended` by
 *     another attempt is resolved by the idempotent default, redrive
 *     (src/steps/unknown-outcome.ts: the cut-off row settled failed, then a new intent, same
 *     key). execute: fault point "before-intent", the intent written and durable, "after-intent",
 *     the attempt's end checked (endedBefore), the function called (the effect starts), the
 *     function returns, "after-fn", a lost lease checked, the outcome written, "after-outcome"
 *     (fault points: src/base/faults.ts). At the end, "before-end", endAttempt records the ending
 *     and releases the lease. A write refused by the fence ends the attempt LEASE_LOST: it
 *     writes nothing more (Attempt.#leaseLost); any other write error fails the attempt, which
 *     then writes its ending (#finish).
 *   Faults (process Faults, budgets CRASHES, FREEZES, WFAULTS, RFAULTS):
 *     - crash: a process stops for good, between any two of its steps (so at every fault point
 *       above and everywhere else); what it had sent and the store applied stays applied;
 *     - freeze and later wake (SIGSTOP/SIGCONT, a VM paused, a partition): the process takes
 *       no step meanwhile, its timers keep running and fire late, it resumes with stale local
 *       state (its view of the log, its idea that it holds the lease);
 *     - a lost reply: a write (intent, outcome, renewal, ending, the claim itself) is applied,
 *       but its writer is told it failed; it then either runs it again as Postgres does
 *       (looking for its own effect first) or gives up as the other stores do;
 *     - an unapplied write: the store could not be reached or the disk is full;
 *     - a slow renewal: the renewal waits for the store across ticks, then lands or fails.
 *   Clock (process Clock): time is abstract. One global tick; every duration a process measures
 *     is a count of ticks on its own timers. Clock OFFSETS (skew) cannot matter to the sound
 *     protocol, which never compares one process's clock with another's, so none is modelled
 *     there; BREAK=2 models a claimer that does compare (the holder's expiresAt against its own
 *     clock, SKEW ticks ahead). Timers that are due on an awake process fire before time moves
 *     on (urgency), so only a freeze or a slow store makes a live holder miss a renewal.
 *
 * PROPERTIES (assertions, checked over every reachable state; P4 by an acceptance-cycle search)
 *   P1 no two attempts record an outcome for one step execution (one intent row): an outcome is
 *      applied only to a row still intended (rows start intended; an outcome moves them on
 *      for good); and the fence alone keeps it so: an outcome the fence lets through never
 *      meets a row that is no longer intended (writeOutcome);
 *   P2 a succeeded step is never run again: no attempt enters a step's function once that step
 *      has a succeeded row recorded by an earlier attempt (an earlier, frozen attempt may still
 *      enter it: docs/recovery.md says so, and fencing refuses its outcome), at PH_CALL;
 *   P3 no effect starts without its intent durable first: when the function is entered, its
 *      intent row is in the store, written by this attempt, at PH_CALL;
 *   P4 (-DLIVENESS) every run whose owner is gone is eventually claimed:
 *      ltl p4 { [] (orphaned -> <> !orphaned) }, where `orphaned` = the lease names an attempt
 *      that no longer runs (its process crashed, or it ended without releasing the lease).
 *      FAIRNESS ASSUMED (pan -f: weak fairness over all processes): time keeps moving (the
 *      clock ticks whenever no due timer holds it), every process that is continuously able
 *      to take a step eventually takes one (so a live worker keeps polling, a live keeper
 *      fires its timers), faults are finite (bounded budgets), every frozen process is woken
 *      again, and at least one worker never crashes (CRASHES < NPROC);
 *   P5 no live lease is taken: at a claim, a previous holder whose attempt still runs has
 *      crashed, lost its lease already, or was frozen or had a renewal delayed or lost during
 *      its attempt; a holder that stayed awake and renewed promptly is never taken over. This
 *      is what watchLease's "unrenewed for a full period on my own clock" buys (fencing alone
 *      keeps P1-P3 whatever the claimer believes).
 *
 * CONFIGURATIONS THAT MUST FAIL (a model that cannot fail proves nothing; the test expects
 * errors for each):
 *   BREAK=1  no fence check on step writes -> P2 (a takeover's view misses a late success)
 *   BREAK=2  the claimer trusts the holder's expiresAt against its own clock -> P5
 *   BREAK=3  an intent write that failed is taken as written: the function is called -> P3
 *   BREAK=4  no fence check and no `status = intended` check on outcomes -> P1
 *   BREAK=5  watchLease restarts its sighting at every look -> P4 (an acceptance cycle)
 *
 * WHAT THE MODEL FOUND, NOW FIXED IN THE CODE (the fixes are the model's behaviour; the old
 * behaviour is kept as a broken variant the test requires SPIN to catch):
 *   GROUP_COMMIT      an idempotent step's outcome is tracked, not awaited (AttemptState.track
 *                     via writeOutcomeLater). When that write failed unapplied (or its reply was
 *                     lost and not retried), the workflow went on to the next step, ran it and
 *                     recorded it succeeded; the next continue redrove the first step and, the
 *                     start point being there, ran the succeeded second step again -> P2. Now a
 *                     failed tracked write ends the attempt before the next function is called
 *                     (AttemptState's tracked-write handler). -DGROUP_COMMIT_AS_WRITTEN: the old.
 *   CHECK_SELF_STOP   P6: an attempt that was never frozen, whose deadline has fired on its
 *                     own timers and whose lease has been taken over, does not enter a step
 *                     function. A renewal that failed fast (a store error) before expiry left
 *                     no renewal under way when the deadline fired, and #onDeadline did
 *                     nothing: the attempt ran on until the next renewal failed. Now the
 *                     deadline after a failed renewal ends the attempt (LeaseKeeper).
 *                     -DKEEPER_AS_WRITTEN: the old.
 *   The default configuration models every outcome as awaited: exactly what compensatable and
 *   irreversible steps do, and what a read or idempotent step's outcome amounts to when it
 *   commits in one transaction with the next intent (SQLite's lone-writer batch).
 *
 * BOUNDS: NPROC workers (2, or 3 with -DNPROC=3), each with its keeper; one run of NSTEPS = 2
 * steps; fault budgets CRASHES, FREEZES, WFAULTS (lost replies and unapplied writes, shared by
 * every write), RFAULTS (slow renewals), 1 each by default; at most MAXROWS step rows (an
 * assertion says if that was too few); lease period P = 3 ticks, renewals every tick.
 *
 * ABSTRACTED: a step row is a slot (real stores key rows by seq); values, idempotency keys and
 * `previous` (a redrive keeps the key); the heartbeat is compared by identity (any renewal is a
 * change every watcher sees), not by the holder's wall-clock value; a renewal still in the
 * network when its keeper stopped is dropped; a Postgres retry of a renewal reapplies it; all
 * clocks run at the same rate (docs/recovery.md relies on that too).
 *
 * NOT COVERED: the JSONL lock file (proper-lockfile) and SQLite's BEGIN IMMEDIATE are taken to
 * make each transaction atomic; Postgres's retries of a lost COMMIT reply beyond the one lost
 * reply a budget unit allows, SKIP LOCKED, its connections and retryForMs; real time (ms,
 * timer drift, leaseMs not divisible by 3, a continue's 1 s looks and 2-minute cap); pid reuse,
 * start times, boot ids, pid namespaces, worker threads, blocked event loops; several attempts
 * or engines in one process (the live-attempt registry); several runs; retries of a step's
 * function, timeouts, cancels, deadlines, waits, sagas and compensation, effects other than
 * idempotent and their policies (query, compensate, escalate), fromStep/redo/reuse, handled
 * failures, maxAttempts and dead letters, recover(), cancel() from another process.
 */

/* The fixes of "WHAT THE MODEL FOUND" are the code's behaviour now. */
#ifndef KEEPER_AS_WRITTEN
#define KEEPER_FIX
#endif
#ifdef GROUP_COMMIT
#ifndef GROUP_COMMIT_AS_WRITTEN
#define GROUP_COMMIT_FIX
#endif
#endif

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
#ifndef MAXROWS
#define MAXROWS 6
#endif
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
#define R_LOST 2
#define R_ERR  3

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
#ifdef CHECK_SELF_STOP
bool wasfrozen[NPROC];          /* ghost (P6): frozen at some time during this attempt */
#endif
#ifdef KEEPER_FIX
bool rfailed[NPROC];            /* the last renewal failed (KEEPER_FIX) */
#endif
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

/* P4's premise: the lease names an attempt that no longer runs: its process died, or the
   attempt ended without releasing it (LEASE_LOST with the lease still its own, a lost claim
   reply, an ending that could not be written). */
#define orphaned (holder != NONE && aep[holder] != epoch)

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
#ifdef KEEPER_FIX
  rfailed[q] = 0;
#endif
#ifdef CHECK_SELF_STOP
  wasfrozen[q] = 0;
#endif
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
#ifdef KEEPER_FIX
        ; rfailed[me] = 0
#endif
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
  /* a held renewal (slow, or a Postgres retry) reaches the store */
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
#ifdef KEEPER_FIX
          ; rfailed[me] = 1
#endif
       fi
     }
  /* the deadline timer (#onDeadline) */
  :: atomic {
       krun[me] && darmed[me] && hexp[me] == 0 -> darmed[me] = 0;
       if
       :: rst[me] == R_IDLE ->
#ifdef KEEPER_FIX
          /* the fix: a lease that ran out after a failed renewal is lost; with no renewal
             tried since the last one recorded (the event loop was held), the overdue one decides */
          if :: rfailed[me] -> stopKeeper(me); lost[me] = 1 :: else fi
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

/* The answer to a write that was applied may be lost: the writer is told it failed. */
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
        :: FENCED(aep[me]) && rstat[slot] != INT ->
           /* P1, as the fence alone keeps it: an outcome the fence lets through always finds
              its row still intended, so the store's own `status = intended` check never has
              to refuse one (it does when the fence is gone: BREAK=1) */
           assert(BREAK == 1);
           res = W_INTERNAL
        :: FENCED(aep[me]) && rstat[slot] == INT ->
#else
        :: FENCED(aep[me]) ->
#endif
           /* P1, as recorded: rows start intended and an outcome moves them on for good, so an
              outcome applied to a row that is not intended would be its second */
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
  if :: st != INT -> sl = 0 :: else fi;
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
#ifdef GROUP_COMMIT
  wfailed = 0;
#endif
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
  retrying = 0; res = 0;
  if
  :: s == NSTEPS -> done = 1; entry = 0; phase = PH_END
  :: else ->
     started = 1; entry = 1;
     if
     :: LST(s) == INT -> slot = LSLOT(s); phase = PH_SETTLE
     :: else -> slot = NONE; phase = PH_INTENT
     fi
  fi;
  /* what the attempt no longer needs */
  if :: s > 0 -> lst0 = 0; lslot0 = 0 :: else fi;
  if :: s > 1 -> lst1 = 0; lslot1 = 0 :: else fi
}

/* A write failed with an error other than LEASE_LOST: run it again (Postgres) or give up. */
#define RETRY_OR_FAIL  res = 0; if :: retrying = 1 :: retrying = 0; done = 0; entry = 0; phase = PH_END fi

/* ---------------- a worker process: continues of the run, one after another ---------------- */
proctype Worker(byte me) provided (!frozen[me]) {
  byte phase = PH_CLAIM;
  byte s, slot = NONE, res, i, prev;
  byte lst0, lst1, lslot0, lslot1;
  bool started, retrying, gone, done, entry;
#ifdef GROUP_COMMIT
  bool wfailed;                 /* a tracked outcome failed (Attempt.#failedWrite) */
#endif

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
          :: res == W_OK -> retrying = 0; slot = NONE; entry = 0; phase = PH_INTENT   /* execute(), same key */
          :: res == W_REFUSED -> leaseLost()
          :: res == W_LOSTREP || res == W_ERR -> RETRY_OR_FAIL
          :: res == W_INTERNAL -> res = 0; retrying = 0; done = 0; entry = 0; phase = PH_END
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
          writeIntent(s, slot, res, retrying);
          if
          :: res == W_OK -> retrying = 0; entry = 0; phase = PH_CALL
          :: res == W_REFUSED -> leaseLost()
#if BREAK == 3
          :: res == W_LOSTREP || res == W_ERR -> res = 0; retrying = 0; entry = 0; phase = PH_CALL   /* a failed intent taken as written */
#else
          :: res == W_LOSTREP || res == W_ERR -> RETRY_OR_FAIL
#endif
          fi
       fi
     }

  /* fault point after-intent; then the function is entered: the effect starts */
  :: atomic {
       phase == PH_CALL ->
       if
       :: lost[me] -> leaseLost()                                       /* endedBefore */
#ifdef GROUP_COMMIT_FIX
       :: !lost[me] && wfailed -> retrying = 0; done = 0; phase = PH_END    /* the fix: a failed tracked write ends the attempt first */
#endif
       :: else ->
          assert(slot != NONE && slot < nrows && rstep[slot] == s && repoch[slot] == aep[me]);   /* P3 */
#ifdef CHECK_SELF_STOP
          /* P6: an attempt never frozen, whose deadline has fired on its own timers and whose
             lease was taken over, does not enter a step function */
          assert(!(!wasfrozen[me] && epoch != aep[me] && hexp[me] == 0 && !darmed[me]));
#endif
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
          :: res == W_LOSTREP || res == W_ERR ->
#ifdef GROUP_COMMIT
             /* the idempotent step's outcome was tracked, not awaited (Attempt.track): its
                failure is kept (#failedWrite) and the workflow goes on to the next step */
             res = 0;
             if
             :: retrying = 1
             :: retrying = 0; wfailed = 1; slot = NONE; s++; advance()
             fi
#else
             RETRY_OR_FAIL
#endif
          :: res == W_INTERNAL -> res = 0; retrying = 0; done = 0; entry = 0; phase = PH_END
          fi
       fi
     }

  /* fault point before-end; endAttempt records the ending and releases the lease */
  :: atomic {
       phase == PH_END ->
       if
       :: lost[me] -> leaseLost()                                       /* #finish: lease-lost */
       :: else ->
#ifdef GROUP_COMMIT
          if :: wfailed -> done = 0 :: else fi;                         /* #settlePending: ending failed */
#endif
          endAttempt(res, retrying, done);
          if
          :: res == W_OK -> stopKeeper(me); aep[me] = 0; forget()
          :: res == W_REFUSED -> leaseLost()
          :: res == W_LOSTREP || res == W_ERR ->
             res = 0;
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

#ifdef CHECK_SELF_STOP
#define MARKFROZEN(q) wasfrozen[q] = krun[q]
#else
#define MARKFROZEN(q) skip
#endif

#define FAULTS_FOR(q) \
  :: atomic { crashes > 0 && !dead[q] -> crash(q) } \
  :: atomic { freezes > 0 && !dead[q] && !frozen[q] -> freezes--; frozen[q] = 1; healthy[q] = 0; MARKFROZEN(q) } \
  :: atomic { frozen[q] -> frozen[q] = 0 }

active proctype Faults() {
  do
  FAULTS_FOR(0)
  FAULTS_FOR(1)
#if NPROC == 3
  FAULTS_FOR(2)
#endif
#ifdef LIVENESS
  :: break        /* faults may stop at any time (and weak fairness must not force one) */
#endif
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
ltl p4 { [] (orphaned -> <> !orphaned) }
#endif
