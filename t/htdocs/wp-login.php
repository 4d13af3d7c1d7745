<p>Log in</p>
