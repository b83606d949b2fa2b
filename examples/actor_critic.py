"""One-step actor-critic on a chain MDP, both gradients from one adjit objective.

The problem. States 0, 1, ..., n-1 on a line; 0 and n-1 are terminal. Each step the agent
picks left or right and moves that way, except that with probability `slip` it moves the
other way. Stepping into state 0 pays a small reward (1), stepping into state n-1 a big one
(10), every other step pays 0; returns are discounted by gamma. Episodes start in state 2,
next to the small reward, so a random policy mostly collects the 1 and the learner must
discover that walking the whole chain is worth more (10 gamma^(n-3) > 1).

The learner. The actor is a tabular softmax policy, logits theta[s, a],

    pi(a | s) = exp(theta[s, a]) / sum_b exp(theta[s, b]),

and the critic a tabular value function V_w(s) = w[s] (V = 0 at terminal states, through
the factor not_done). After each transition (s, a, r, s') the TD error is

    delta = r + gamma V_w(s') - V_w(s),

and both learners take one gradient step on the single objective

    L(theta, w) = - stop_gradient(delta) * log pi(a | s)                    (actor)
                  + 0.5 * (stop_gradient(r + gamma V_w(s')) - V_w(s))^2      (critic),

differentiated by adjit with respect to (theta, w) at once:
theta -= alpha_actor * dL/dtheta,  w -= alpha_critic * dL/dw.

What stop_gradient does here. Without it, L would be a wrong objective for both parts:

* the actor term depends on w through delta; differentiating it would push the critic to
  change V so as to make -delta log pi small, which is not what a value function is for.
  With delta stopped it is a constant weight (the advantage estimate), so the actor term
  gives dL/dtheta[s, :] = -delta (onehot(a) - pi(. | s)) (the policy-gradient step) and
  exactly zero to dL/dw;
* the critic's target r + gamma V_w(s') also depends on w; differentiating it would give
  the "residual gradient" with a term gamma * (target - V(s)) at w[s']. With the target
  stopped only V_w(s) is differentiated: dL/dw = -(target - V(s)) onehot(s), the
  semi-gradient TD(0) update, and it gives nothing to theta.

So one call of the gradient yields both updates, each from its own loss. main() checks this
numerically once: the combined gradient equals (actor's theta-gradient, critic's
w-gradient), the actor term's w-gradient is exactly zero, the critic's w-gradient is the
semi-gradient formula, and the same objective without stop_gradient gives a different w.

The training loop (episodes, actions sampled with np.random inside numba, one adjit gradient
per step) is a single @numba.njit function. Value iteration gives the optimal return from
the start state; the policy's return is evaluated exactly by solving the Bellman equation
V = r_pi + gamma P_pi V.
Run: .venv/bin/python examples/actor_critic.py
"""
import math
import time

import numba
import numpy as np

import adjit
from adjit import stop_gradient


# ---------------------------------------------------------------- the objective
def log_policy(theta, s, a):
    """log pi(a | s) for the softmax over theta[s, :], stable (the max shift is stopped)."""
    m = theta[s, 0]
    for b in range(theta.shape[1]):
        m = max(m, theta[s, b])
    m = stop_gradient(m)
    total = 0.0
    for b in range(theta.shape[1]):
        total += math.exp(theta[s, b] - m)
    return theta[s, a] - m - math.log(total)


def actor_loss(theta, w, s, a, r, s2, not_done, gamma):
    delta = r + gamma * not_done * w[s2] - w[s]
    return -stop_gradient(delta) * log_policy(theta, s, a)


def critic_loss(theta, w, s, a, r, s2, not_done, gamma):
    target = stop_gradient(r + gamma * not_done * w[s2])
    err = target - w[s]
    return 0.5 * err * err


def objective(theta, w, s, a, r, s2, not_done, gamma):
    return (actor_loss(theta, w, s, a, r, s2, not_done, gamma)
            + critic_loss(theta, w, s, a, r, s2, not_done, gamma))


def objective_unstopped(theta, w, s, a, r, s2, not_done, gamma):
    """The same objective with both stop_gradients removed (for the check only)."""
    target = r + gamma * not_done * w[s2]
    delta = target - w[s]
    err = target - w[s]
    return -delta * log_policy(theta, s, a) + 0.5 * err * err


grad_objective = adjit.grad(objective, argnums=(0, 1))
grad_actor = adjit.grad(actor_loss, argnums=(0, 1))
grad_critic = adjit.grad(critic_loss, argnums=(0, 1))
grad_unstopped = adjit.grad(objective_unstopped, argnums=(0, 1))


# ---------------------------------------------------------------- the environment
@numba.njit
def step(n, s, a, slip):
    """One transition from the non-terminal state s: (s', reward, done)."""
    move = 1 if a == 1 else -1
    if np.random.random() < slip:
        move = -move
    s2 = s + move
    if s2 == 0:
        return s2, 1.0, True
    if s2 == n - 1:
        return s2, 10.0, True
    return s2, 0.0, False


def transition_model(n, slip):
    """P[s, a, s'] and expected reward R[s, a] (terminal states absorb, reward 0)."""
    P = np.zeros((n, 2, n))
    R = np.zeros((n, 2))
    reward = np.zeros(n)
    reward[0], reward[n - 1] = 1.0, 10.0
    for s in range(n):
        for a in range(2):
            if s == 0 or s == n - 1:
                P[s, a, s] = 1.0
                continue
            move = 1 if a == 1 else -1
            for s2, p in ((s + move, 1.0 - slip), (s - move, slip)):
                P[s, a, s2] += p
                R[s, a] += p * reward[s2]
    return P, R


def value_iteration(P, R, gamma, tol=1e-13):
    V = np.zeros(P.shape[0])
    while True:
        Q = R + gamma * P @ V
        V_new = Q.max(axis=1)
        if np.abs(V_new - V).max() < tol:
            return V_new, Q.argmax(axis=1)
        V = V_new


def softmax_policy(theta):
    z = np.exp(theta - theta.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def policy_value(theta, P, R, gamma):
    """Exact V_pi: solve (I - gamma P_pi) V = r_pi, terminal states fixed at 0."""
    n = P.shape[0]
    pi = softmax_policy(theta)
    P_pi = np.einsum("sa,sat->st", pi, P)
    r_pi = np.sum(pi * R, axis=1)
    inner = np.arange(1, n - 1)
    A = np.eye(n - 2) - gamma * P_pi[np.ix_(inner, inner)]
    V = np.zeros(n)
    V[inner] = np.linalg.solve(A, r_pi[inner])
    return V


# ---------------------------------------------------------------- training, compiled
@numba.njit
def train(theta, w, n, start, slip, gamma, alpha_actor, alpha_critic, episodes,
          max_steps, returns):
    """Runs `episodes` episodes of one-step actor-critic, updating theta and w in place;
    returns[k] receives episode k's discounted return. Returns the number of steps taken."""
    steps = 0
    for k in range(episodes):
        s = start
        G = 0.0
        disc = 1.0
        for t in range(max_steps):
            # sample a ~ pi(. | s)
            m = max(theta[s, 0], theta[s, 1])
            p1 = math.exp(theta[s, 1] - m) / (math.exp(theta[s, 0] - m)
                                              + math.exp(theta[s, 1] - m))
            a = 1 if np.random.random() < p1 else 0
            s2, r, done = step(n, s, a, slip)
            G += disc * r
            disc *= gamma
            not_done = 0.0 if done else 1.0
            g_theta, g_w = grad_objective(theta, w, s, a, r, s2, not_done, gamma)
            theta -= alpha_actor * g_theta
            w -= alpha_critic * g_w
            steps += 1
            if done:
                break
            s = s2
        returns[k] = G
    return steps


@numba.njit
def seed_numba(seed):
    np.random.seed(seed)


# ---------------------------------------------------------------- the stop_gradient check
def check_stop_gradient(n, gamma, seed):
    """At a random (theta, w) and transition: the combined gradient splits exactly into the
    actor's theta-gradient and the critic's semi-gradient; the actor term gives w nothing.
    Returns the largest deviations."""
    rng = np.random.default_rng(seed + 1)
    theta = rng.normal(size=(n, 2))
    w = rng.normal(size=n)
    s, a, r, s2, not_done = 3, 1, 0.0, 4, 1.0
    args = (s, a, r, s2, not_done, gamma)
    g_theta, g_w = grad_objective(theta, w, *args)
    a_theta, a_w = grad_actor(theta, w, *args)
    c_theta, c_w = grad_critic(theta, w, *args)
    u_theta, u_w = grad_unstopped(theta, w, *args)

    delta = r + gamma * not_done * w[s2] - w[s]
    pi = softmax_policy(theta)[s]
    expect_theta = np.zeros_like(theta)
    expect_theta[s] = -delta * (np.eye(2)[a] - pi)               # policy-gradient step
    expect_w = np.zeros(n)
    expect_w[s] = -delta                                          # semi-gradient TD(0)
    residual_w = expect_w.copy()
    residual_w[s2] += gamma * delta                               # d target / d w[s2]
    logp = np.log(pi[a])
    unstopped_w = residual_w.copy()                               # -delta log pi, unstopped
    unstopped_w[s] += logp
    unstopped_w[s2] -= gamma * logp
    return {
        "actor_w_grad_max": float(np.abs(a_w).max()),             # exactly 0 with sg
        "critic_theta_grad_max": float(np.abs(c_theta).max()),    # exactly 0
        "split_error": float(max(np.abs(g_theta - a_theta).max(), np.abs(g_w - c_w).max())),
        "theta_grad_error": float(np.abs(g_theta - expect_theta).max()),
        "w_grad_error": float(np.abs(g_w - expect_w).max()),
        "w_grad_at_next_state": float(abs(g_w[s2])),              # target not differentiated
        "unstopped_w_error": float(np.abs(u_w - unstopped_w).max()),
        "unstopped_w_differs": float(np.abs(u_w - g_w).max()),
    }


# ---------------------------------------------------------------- main
def main(n=10, episodes=5000, seed=0, gamma=0.95, slip=0.1, alpha_actor=0.1,
         alpha_critic=0.5, max_steps=200, verbose=True):
    start = 2
    P, R = transition_model(n, slip)
    V_opt, greedy = value_iteration(P, R, gamma)
    optimal = float(V_opt[start])
    always_left = np.zeros((n, 2))
    always_left[:, 0] = 50.0
    trap = float(policy_value(always_left, P, R, gamma)[start])    # the nearby small reward

    check = check_stop_gradient(n, gamma, seed)

    theta = np.zeros((n, 2))
    w = np.zeros(n)
    returns = np.zeros(episodes)
    t0 = time.perf_counter()
    seed_numba(seed)
    train(theta, w, n, start, slip, gamma, alpha_actor, alpha_critic, 0, max_steps,
          returns[:0])                                   # compile (0 episodes)
    compile_s = time.perf_counter() - t0

    exact = [float(policy_value(theta, P, R, gamma)[start])]
    seed_numba(seed)
    t0 = time.perf_counter()
    # evaluate after these many episodes (denser early, where the policy changes most)
    bounds = np.unique(np.round(episodes * np.array(
        [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0])).astype(np.int64))
    chunks = len(bounds) - 1
    steps = 0
    for c in range(chunks):
        lo, hi = bounds[c], bounds[c + 1]
        steps += train(theta, w, n, start, slip, gamma, alpha_actor, alpha_critic, hi - lo,
              max_steps, returns[lo:hi])
        exact.append(float(policy_value(theta, P, R, gamma)[start]))
    train_s = time.perf_counter() - t0

    V_final = policy_value(theta, P, R, gamma)
    pi = softmax_policy(theta)
    sampled = [float(returns[bounds[c]:bounds[c + 1]].mean()) for c in range(chunks)]
    out = {
        "optimal_return": optimal,
        "always_left_return": trap,
        "start_return": exact[0],
        "final_return": exact[-1],
        "final_fraction": exact[-1] / optimal,
        "exact_curve": exact,
        "sampled_curve": sampled,
        "critic_error": float(np.abs(w[1:n - 1] - V_final[1:n - 1]).max()),
        "p_right": pi[1:n - 1, 1],
        "greedy_matches_optimal": bool(np.all(pi[1:n - 1].argmax(axis=1)
                                              == greedy[1:n - 1])),
        "steps": steps,
        "compile_s": compile_s,
        "train_s": train_s,
        **check,
    }
    if verbose:
        print(f"chain of {n} states, start {start}, rewards 1 (state 0) and 10 (state {n - 1}), "
              f"slip {slip}, gamma {gamma}")
        print(f"optimal return from the start (value iteration): {optimal:.4f}; "
              f"always left (the small reward): {trap:.4f}")
        print("\nstop_gradient check at a random (theta, w), transition 3 -right-> 4:")
        print(f"  actor term's gradient w.r.t. w          {check['actor_w_grad_max']:.1e}"
              "  (exactly zero)")
        print(f"  critic term's gradient w.r.t. theta     {check['critic_theta_grad_max']:.1e}")
        print(f"  combined = (actor theta, critic w)      {check['split_error']:.1e}")
        print(f"  dL/dtheta vs -delta (onehot(a) - pi)    {check['theta_grad_error']:.1e}")
        print(f"  dL/dw vs -delta onehot(s) (semi-grad.)  {check['w_grad_error']:.1e};"
              f" dL/dw[s'] = {check['w_grad_at_next_state']:.1e}")
        print(f"  without stop_gradient dL/dw changes by  {check['unstopped_w_differs']:.3f}"
              f" (matches its formula to {check['unstopped_w_error']:.1e})")
        print(f"\n{episodes} episodes, {steps} steps (one adjit gradient each, all inside "
              f"@njit) in {train_s * 1e3:.1f} ms = {train_s / steps * 1e9:.0f} ns per step "
              f"(+ {compile_s:.2f} s compiling)")
        print(f"{'episodes':>10} {'exact return':>13} {'mean sampled':>13}")
        print(f"{0:>10} {exact[0]:13.4f} {'':>13}")
        for c in range(chunks):
            print(f"{bounds[c + 1]:>10} {exact[c + 1]:13.4f} {sampled[c]:13.4f}")
        print(f"\nreturn: start {exact[0]:.4f} -> final {exact[-1]:.4f} = "
              f"{100 * out['final_fraction']:.1f}% of optimal {optimal:.4f}")
        print("P(right) per state:", np.array2string(pi[1:n - 1, 1], precision=3))
        print(f"greedy policy = optimal policy: {out['greedy_matches_optimal']}; "
              f"critic vs exact V_pi max error {out['critic_error']:.3f}")
    return out


if __name__ == "__main__":
    main()
