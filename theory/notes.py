"""Hand-written derivations appended to the generated ``docs/derivation.md``."""

HANDWRITTEN = r"""
## Hand-written derivations

### Derivatives through the softmax

With scores $a_{lk} = h_l \cdot h_k$ and $S_{lk} = e^{a_{lk}} / \sum_j e^{a_{lj}}$,
$\partial S_{lk} / \partial a_{lj} = S_{lk} (\delta_{kj} - S_{lj})$ and
$\partial a_{lj} / \partial h_i = \delta_{li} h_j + \delta_{ji} h_l$ (r = 1). The softmax is
kept as an unevaluated sympy function whose derivative is written through itself
(`attnphase.theory.attention.SoftmaxEntry`); after differentiating, every softmax
entry is replaced by a symbol $S_{lk}$. Loss, gradient and Hessian are therefore
polynomials in $(h, S, T, \sigma^2)$ (plus $1/V_l$ in the proximal objective), and
the kernels evaluate $S$ once per point with a max-shifted softmax: no exponential
of a field is ever taken, so nothing overflows, at any finite $h$.

### From the finite-d risk to the limit loss

Write $D = T(h^*) - S(h)$. Since $y_l = \sum_k T_{lk} x_k$ and
$f_l = \sum_k S_{lk} (x_k + p_k)$,

$$
\frac{1}{2d} |y_l - f_l|^2 = \frac{1}{2d} \Big|\sum_k D_{lk} x_k\Big|^2
 - \frac{1}{d} \Big(\sum_k D_{lk} x_k\Big) \cdot \Big(\sum_k S_{lk} p_k\Big)
 + \frac{1}{2d} \Big|\sum_k S_{lk} p_k\Big|^2 .
$$

* First term: $x_k \cdot x_{k'} / d = \delta_{kk'} \sigma_k^2 + O(d^{-1/2})$, giving the limit loss
  $\frac12 \sum_{l,k} \sigma_k^2 D_{lk}^2$ (note $\sigma_k$, the variance of the token being attended to).
* Second term: $x_k \cdot p_{k'} = O(1)$ (a Gaussian of variance $\sigma_k^2 P_{k'k'}$), so the term is $O(1/d)$.
* Third term: $|\sum_k S_{lk} p_k|^2 = S_l^\top P S_l = O(1)$, so the term is $O(1/d)$.

The fluctuations of $x_k \cdot x_{k'} / d$ are $O(d^{-1/2})$ but correlated with the fields
$h, h^*$ only at $O(1/d)$ (e.g. $\mathrm{Cov}(|x_k|^2, (Q \cdot x_k)^2 / d) = 2 \sigma_k^4 |Q|^2 / d$).
Hence $E[\frac{1}{2d}|y - f|^2] = E[\mathrm{loss}(h, h^*)] + O(1/d)$, not $O(d^{-1/2})$, and the
positions, although they move the fields ($m_l$), drop out of the per-sample loss. The test
`tests/theory/test_theory_limit_loss.py` measures $\Delta(d) = E[\text{finite} - \text{limit}]$ on the
same samples (paired, so the $O(d^{-1/2})$ noise mostly cancels) at several $d$ and checks
that $\Delta(d) = a + b/d$ with $a = 0$ within its standard error, i.e. that the difference
vanishes like $1/d$; a wrong limit loss would leave $a = O(1)$.

### The prior side as a finite-d ridge problem

The prior side of the state evolution is the ridge problem seen by $Q \in \mathbb{R}^d$ when
each token's channel is replaced by a Gaussian surrogate with the hat overlaps
(token covariance $\Sigma_l = \sigma_l^2 I_d$):

$$
\hat Q = \operatorname{argmin}_Q \; \frac{\lambda}{2} |Q|^2
 + \sum_l \Big[ \frac{\hat V_l}{2} Q^\top \Sigma_l Q
 - Q^\top \big( \sqrt{\hat q_l}\, \Sigma_l^{1/2} z_l + \hat m_l \sqrt{d}\, p_l + \hat\theta_l \Sigma_l Q^* \big) \Big],
 \qquad z_l \sim N(0, I_d) \text{ iid over } l .
$$

Its Hessian is $\Lambda I_d$ with $\Lambda = \lambda + \sum_l \sigma_l^2 \hat V_l$, so
$\hat Q = b / \Lambda$ with
$b = \sum_l \sigma_l \sqrt{\hat q_l} z_l + \sqrt{d} \sum_l \hat m_l p_l + (\sum_l \sigma_l^2 \hat\theta_l) Q^*$.
As $d \to \infty$ ($z_l \cdot z_{l'} / d \to \delta_{ll'}$, $|Q^*|^2/d \to \rho_0$, and
$z_l \cdot Q^*/d$, $z_l \cdot p_k / \sqrt{d}$, $p_k \cdot Q^* / \sqrt d$ divided by the
remaining powers of $d$ all vanish):

* $q_0 = |\hat Q|^2 / d = (\sum_l \sigma_l^2 \hat q_l + \hat m^\top P \hat m + \rho_0 (\sum_l \sigma_l^2 \hat\theta_l)^2) / \Lambda^2$,
* $m_k = p_k \cdot \hat Q / \sqrt d = \sum_l P_{kl} \hat m_l / \Lambda$,
* $\theta_0 = \hat Q \cdot Q^* / d = \rho_0 \sum_l \sigma_l^2 \hat\theta_l / \Lambda$,
* $V_0 = \frac1d \operatorname{tr} (\text{Hessian})^{-1} = 1 / \Lambda$ (the linear response of $\hat Q$ to $b$),

which is docs/model.md's prior update. The noises $z_l$ are independent across tokens (each
token's field has its own Gaussian fluctuation), which is what produces
$\sum_l \sigma_l^2 \hat q_l$ rather than $(\sum_l \sigma_l \sqrt{\hat q_l})^2$. The test
`tests/theory/test_theory_prior.py` minimises this objective numerically at $d = 40000$ (L-BFGS on
the objective as written above, not on its closed form) and compares the measured
$q_0, m, \theta_0$ and the linear response $V_0$ with `RidgePrior.update`. For rank $r > 1$ the
same construction gives a matrix ridge (docs/model.md section 7).

### Training objective at a fixed point

Insert the prior-side fixed point into $\Phi$ (docs/model.md section 4):
$\sum_l \hat V_l q_l / 2 = q_0 (\Lambda - \lambda)/2$, $\sum_l \hat q_l V_l / 2 = \sum_l \sigma_l^2 \hat q_l / (2\Lambda)$,
$\sum_l m_l \hat m_l = \hat m^\top P \hat m / \Lambda$, $\sum_l \theta_l \hat\theta_l = \rho_0 (\sum_l \sigma_l^2\hat\theta_l)^2/\Lambda$,
and the ridge term equals $\Lambda q_0 / 2$. Then
$\Phi = \sum_l \sigma_l^2 \hat q_l / (2 \Lambda) - \lambda q_0 / 2 - \alpha E[M]$, and with
$\hat q_l = \alpha E[g_l^2]$, $M = \sum_l V_l g_l^2 / 2 + \mathrm{loss}(\hat h, h^*)$, $V_l = \sigma_l^2 / \Lambda$:

$$
e_t = -\Phi = \frac{\lambda}{2} q_0 + \alpha\, E[\mathrm{loss}(\hat h, h^*)] ,
$$

the regularised training loss per dimension, as it must be. `tests/theory/test_theory_free_entropy.py`
checks this identity through `RidgePrior.update` and `free_entropy`.

### Stationarity of Phi: e_t from a finer rule, and its slope in alpha

The state-evolution equations are the stationarity conditions of $\Phi(x, \hat x; \alpha)$ in
the overlaps $x$ and the hat overlaps $\hat x$: $\partial \Phi / \partial \hat x = 0$ is the prior
update and $\partial \Phi / \partial x = 0$ the channel side, with
$\partial E[M] / \partial m_l = -E[g_l]$, $\partial E[M] / \partial V_l = -E[g_l^2] / 2$ (envelope
theorem, node by node) and the $q_l, \theta_l$ derivatives reduced to $E[g_l \xi_l]$, $E[g_l \eta_l]$
by Gaussian integration by parts. Two consequences, used by `attnphase.numerics.se.training_objective`:

* **A rule's error reaches $e_t$ mainly through $E[M]$.** A rule that errs by $\delta F$ on the SE
  map moves the fixed point by $\delta x = O(\delta F)$; since $\Phi$ is stationary there,
  $\Phi(x^* + \delta x) - \Phi(x^*) = O(\delta x^2)$, while the rule's error on the one integral in
  $\Phi$ enters at first order, $-\alpha\,(E_{\rm rule}[M] - E[M])$. Re-evaluating $E[M]$ alone on a
  finer rule at the converged $(x^*, \hat x^*)$ removes that term. A finite rule satisfies
  integration by parts only approximately, so its SE map is not exactly stationary for the
  rule's own $\Phi$; the leftover is a product of two rule errors.
* **$d e_t / d\alpha = E[M]$ along a branch.** The only explicit $\alpha$ in $\Phi$ is $-\alpha E[M]$
  and the total derivative of a stationary value is its partial derivative, so
  $d\Delta e_t / d\alpha = E_{\rm sem}[M] - E_{\rm pos}[M]$ at any $\alpha$ where both branches
  exist: the slope for a Newton step on $\Delta e_t = 0$ (alpha_c) comes with the $E[M]$
  evaluations. `tests/numerics/se/test_training_objective.py` checks it against central
  differences of $e_t$ along both branches.

### Stability of theta = 0: where the semantic branch is born

At a state with $\theta_0 = 0$ the $\theta_0$-component of the SE map vanishes whatever the other
overlaps ($\theta \to -\theta$ is a symmetry) and the other components are even in $\theta_0$, so the
Jacobian is block diagonal and the $\theta$ direction has the single eigenvalue
$\lambda = \partial \theta_0^{\rm new} / \partial \theta_0$ at $\theta_0 = 0$, with
$\theta_0^{\rm new} = \rho_0 \sum_l \sigma_l^2 \hat\theta_l / \Lambda$. To first order only
$\hat\theta_l = \alpha E[g_l \eta_l] / \sqrt{\tilde\rho_l}$ moves ($\Lambda$ and $\tilde\rho_l$ are even, and
$E[g_l \eta_l] = 0$ at $\theta_0 = 0$).

The derivative of $E[g_l \eta_l]$ must not differentiate $g$, which jumps with the global proximal
map. Write the average over the fields: per token $(w_l - m_l, h^*_l)$ is bivariate normal with
variances $q_l, \rho_l$ and covariance $\theta_l = \sigma_l^2 \theta_0$, independent across tokens, and
$g$ is a function of $(w, h^*)$ alone. The covariance's score at 0 is
$\partial_c \log N(x, y; [[a, c], [c, b]])|_{c=0} = x y / (a b)$ (derived by sympy,
`attnphase.theory.stability.covariance_score_expr`), i.e. $\sigma_k^2 \xi_k \eta_k / \sqrt{q_k \rho_k}
= \xi_k \eta_k / \sqrt{q_0 \rho_0}$ per token; and $\eta_l = (h^*_l - \theta_l \xi_l / \sqrt{q_l}) / \sqrt{\tilde\rho_l}$
itself moves, $\partial \eta_l / \partial \theta_0 = -\xi_l / \sqrt{q_0 \rho_0}$. Hence

$$
\frac{\partial E[g_l \eta_l]}{\partial \theta_0}\Big|_{\theta_0 = 0}
 = \frac{E[g_l S_l]}{\sqrt{q_0 \rho_0}}, \qquad S_l = \eta_l \sum_k \xi_k \eta_k - \xi_l ,
$$

and with $\rho_l = \sigma_l^2 \rho_0$, $\Lambda = 1 / V_0$ (sympy: `theta_stability_expr`)

$$
\lambda = \frac{\alpha V_0}{\sqrt{q_0}} \sum_l \sigma_l\, E[g_l S_l] .
$$

The semantic branch bifurcates from the $\theta = 0$ branch where $\lambda = 1$; where the
bifurcation is supercritical this is the branch's continuous end.

The same in the $m$ direction at an agnostic state ($m = 0$, $\theta_0 = 0$): $m \to -m$ makes the
$m$-block of the Jacobian decouple, $m^{\rm new}_k = \sum_l P_{kl} \hat m_l / \Lambda$ with
$\hat m_l = \alpha E[g_l]$ and $\Lambda$ even in $m$, and a shift of the mean of $w_j$ has score
$\partial_\mu \log N(x; \mu, q)|_{\mu = 0} = x / q$ (sympy: `mean_score_expr`) with
$x = w_j - m_j = \sqrt{q_j}\, \xi_j$, so (sympy: `m_stability_exprs`)

$$
J^{(m)}_{kj} = \frac{\partial m^{\rm new}_k}{\partial m_j} = \alpha V_0 \sum_l P_{kl} \frac{E[g_l \xi_j]}{\sqrt{\sigma_j^2 q_0}} ,
$$

whose leading eigenvalue crosses 1 where a positional branch leaves or rejoins the agnostic one.
`tests/numerics/phase/test_stability.py` checks both derivative identities against central differences for a
smooth stand-in for $g$, and $\lambda = 0$ at $\omega = 1$ (the target ignores $h^*$).

### Degenerate limits of the channel

* $q_0 \to 0$: $w_l = m_l$ no longer depends on $\xi_l$ and $\theta_l / \sqrt{q_l}$ is $0/0$
  ($|\theta_0| \le \sqrt{q_0 \rho_0}$). `channel_fields` and `hat_overlaps` require $q_0 > 0$
  and raise `ValueError` otherwise; the numerics keep $q_0 > 0$.
* $\theta_0^2 \to q_0 \rho_0$: $\tilde\rho_l = \rho_l - \theta_l^2 / q_l \to 0$ and $h^*_l$ is a function
  of $\xi_l$ alone. By Stein's lemma $E[g_l \eta_l] / \sqrt{\tilde\rho_l} = E[\partial g_l / \partial h^*_l]$,
  finite, but the quotient cannot be evaluated there: `hat_overlaps` requires $\tilde\rho_l > 0$;
  `channel_fields` clips $\tilde\rho_l$ that is negative by round-off only ($\ge -10^{-12} \rho_l$) to 0
  and raises `ValueError` for $\theta_0^2 > q_0 \rho_0$.
* $\Lambda \le 0$: the ridge problem is unbounded; `RidgePrior.update` and `free_entropy` raise `ValueError`.

### Rank r student, rank r* teacher (docs/model.md section 7)

Code: `attnphase.theory.matrix_channel` (formulas), `attnphase.theory.kernels` (the loss, its gradient and
Hessian in the $L r$ entries of $h$, generated from the same sympy derivation with $h \in R^{L\times r}$),
`attnphase.numerics.se.se_map` (the solver). Overlaps: $q_0 = Q^\top Q/d$, $V_0$ ($r\times r$),
$\theta_0 = Q^\top Q^*/d$ ($r\times r^*$), $m_l = Q^\top p_l/\sqrt d \in R^r$; per token
$q_l = \sigma_l^2 q_0$, $\theta_l = \sigma_l^2\theta_0$, $V_l = \sigma_l^2 V_0$, $\rho_l = \sigma_l^2\rho_0 I_{r^*}$.

**Channel.** $(w_l, h^*_l)$ is Gaussian with mean $(m_l, 0)$ and covariance
$\begin{pmatrix} q_l & \theta_l \\ \theta_l^\top & \rho_l\end{pmatrix}$, independent across tokens. With
$\xi_l \sim N(0, I_r)$, $\eta_l \sim N(0, I_{r^*})$ and any factors $A A^\top = q_l$, $R R^\top = \tilde\rho_l$:
$w_l = m_l + A\xi_l$, $h^*_l = B\xi_l + R\eta_l$ with $B = \theta_l^\top A^{-\top}$ (so $A B^\top = \theta_l$) and
$\tilde\rho_l = \rho_l - \theta_l^\top q_l^{-1}\theta_l$. The code takes the symmetric square roots
$A = q_l^{1/2}$, $R = \tilde\rho_l^{1/2}$.

**Hats from the stationarity of $\Phi$ in the overlaps.** $\Phi$ contains
$\sum_l [\tfrac12{\rm Tr}(\hat V_l q_l) - \tfrac12{\rm Tr}(\hat q_l V_l) - m_l\cdot\hat m_l - {\rm Tr}(\theta_l^\top\hat\theta_l)] - \alpha E[M]$.
For a Gaussian vector $z$ with covariance $C$, $dE[f] = \tfrac12\sum_{ij} E[\partial_i\partial_j f]\, dC_{ij}$; the
blocks give $\partial E[M]/\partial q_l = \tfrac12 E[\nabla_w\nabla_w^\top M]$ and
$\partial E[M]/\partial\theta_l = E[\nabla_w\nabla_{h^*}^\top M]$. The envelope theorem gives
$\nabla_{w_l} M = -g_l$, $g_l = V_l^{-1}(\hat h_l - w_l)$, and $\partial M/\partial V_l = -\tfrac12 g_l g_l^\top$. So

$$
\hat q_l = \alpha E[g_l g_l^\top],\quad \hat m_l = \alpha E[g_l],\quad
\hat\theta_l = \alpha E\Big[\frac{\partial g_l}{\partial h^*_l}\Big],\quad \hat V_l = -\alpha E\Big[\frac{\partial g_l}{\partial w_l}\Big].
$$

Stein's lemma on $\eta$ and on $\xi$ (valid for the discontinuous $g$ of the global minimiser, where
pointwise derivatives would miss the jumps): $E[g\eta^\top] = E[\partial g/\partial h^*] R$ and
$E[g\xi^\top] = E[\partial g/\partial w] A + E[\partial g/\partial h^*] B$, hence

$$
\hat\theta_l = \alpha E[g_l\eta_l^\top] R^{-1},\qquad
\hat V_l = -\alpha E[g_l\xi_l^\top] A^{-1} + \hat\theta_l\,\theta_l^\top q_l^{-1}
$$

(any factors; symmetric in exact arithmetic, symmetrised after quadrature). At $r = r^* = 1$ these are
the formulas of section 3 (tests/theory/test_matrix_channel.py: equal to the generated rank-1 ones to round-off).

**Prior.** The prior part of $\Phi$ is $\tfrac12{\rm Tr}[\Lambda^{-1}N]$ with
$\Lambda = \lambda I_r + \sum_l\sigma_l^2\hat V_l$, $N = \sum_l\sigma_l^2\hat q_l + \sum_{kl}P_{kl}\hat m_k\hat m_l^\top + \Theta\rho_0\Theta^\top$,
$\Theta = \sum_l\sigma_l^2\hat\theta_l$. Its stationarity in the hats:
$\partial/\partial\hat q_l$: $V_0 = \Lambda^{-1}$; $\partial/\partial\hat V_l$: $q_0 = \Lambda^{-1}N\Lambda^{-1}$;
$\partial/\partial\hat m_l$: $m_l = \Lambda^{-1}\sum_k P_{lk}\hat m_k$; $\partial/\partial\hat\theta_l$:
$\theta_0 = \Lambda^{-1}\Theta\rho_0$ (checked by autograd). It is the finite-d ridge problem
$\min_Q \tfrac12{\rm Tr}(Q\Lambda Q^\top) - {\rm Tr}(Q^\top B)$ with
$B = \sum_l\sigma_l Z_l\hat q_l^{1/2} + \sqrt d\sum_l p_l\hat m_l^\top + Q^*\Theta^\top$, $Z_l$ iid $N(0,1)^{d\times r}$:
$Q = B\Lambda^{-1}$, and $B^\top B/d \to N$, $B^\top Q^*/d \to \Theta\rho_0$, $B^\top p_k/\sqrt d \to \sum_l P_{kl}\hat m_l$
(checked at $d = 2\cdot10^4$).

**Training objective.** At a fixed point, with the prior equations,
$\sum_l\tfrac12{\rm Tr}(\hat V_l q_l) = \tfrac12{\rm Tr}(\Lambda q_0) - \tfrac\lambda2{\rm Tr}\,q_0$,
$\sum_l m_l\cdot\hat m_l = {\rm Tr}(\Lambda^{-1}\sum P\hat m\hat m^\top)$,
$\sum_l{\rm Tr}(\theta_l^\top\hat\theta_l) = {\rm Tr}(\Lambda^{-1}\Theta\rho_0\Theta^\top)$, so
$\Phi = -\tfrac\lambda2{\rm Tr}\,q_0 + \tfrac12\sum_l{\rm Tr}(\hat q_l V_l) - \alpha E[M]$ and, with
$\hat q_l = \alpha E[g_lg_l^\top]$, $\tfrac12{\rm Tr}(\hat q_l V_l) = \alpha E[\tfrac12(\hat h_l - w_l)^\top V_l^{-1}(\hat h_l - w_l)]$:
$e_t = -\Phi = \tfrac\lambda2{\rm Tr}\,q_0 + \alpha E[{\rm loss}(\hat h, h^*)]$.

**Gauge.** $Q\to QO$ ($O\in O(r)$) and, the teacher being $N(0, \rho_0 I)$, $Q^*\to Q^*O^*$ leave the risk
invariant: $q_0\to O^\top q_0O$, $V_0\to O^\top V_0O$, $m_l\to O^\top m_l$, $\theta_0\to O^\top\theta_0O^*$; the SE
map is equivariant, so fixed points are orbits. The solver iterates $G(x) = g(x)\cdot F(x)$ with
$g(x)\in SO(r)\times SO(r^*)$ the rotation that brings $F(x)$ closest to $x$ (its residual is orthogonal to
the orbit); quasi-Newton moves orthogonally to the orbit. A finite rule breaks the rotation symmetry, so at
convergence $g$ differs from the identity by the `gauge_angle`, which shrinks as the rule grows
(measured at $L = 2$, $r = 2$, $\alpha = 2$: 0.041 rad with $2^{12}$ nodes, 0.011 with $2^{14}$). A gauge fixed by a
canonical form instead (eigenbasis of $q_0$, signs) admits "relative" fixed points $F(x) = O x$: at $r = 1$
it accepted a positional point whose image had $m\to -m$, with $e_t < 0$. Reported: the invariants
(eigenvalues of $q_0$, $V_0$; singular values of $\theta_0$; $|m_l|$) and the overlaps in the canonical gauge.

**Branches.** $m = 0$ is invariant under the map ($(\xi,\eta)\to-(\xi,\eta)$ maps $\hat h\to-\hat h$, so
$E[g] = 0$) and so is $\theta_0 = 0$ ($\eta\to-\eta$ leaves $T(h^*)$ and $g$ unchanged, so $E[g\eta^\top] = 0$):
the semantic branch sets $\hat m = 0$, the positional $\hat\theta = 0$, the agnostic both, the mixed neither.
"""
